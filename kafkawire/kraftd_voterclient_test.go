//go:build unix

package kafkawire

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMixedKraftdAutoJoinsAndUpdatesItsEndpoint: kraftd, formatted without
// initial voters and started with Kafka's bootstrap-servers list and
// -auto-join (controller.quorum.auto.join.enable), sends AddRaftVoter v0
// with its CONTROLLER listener to the Kafka leader of a dynamic quorum of
// two Kafka nodes, by itself: every replica then reports the set of three.
// kraftd is then restarted on a new port: as a follower whose entry in the
// voter set names its old endpoint, it sends UpdateRaftVoter v0 to the
// Kafka leader, and every replica's voter set (the Kafka nodes' status
// included) shows the new endpoint (D170, D171). Kafka's fetch timeout is
// 2 s, out of Kafka's own race on a removed voter's BeginQuorumEpoch answer
// (TestMixedKraftdJoinsAKafkaDynamicQuorum).
func TestMixedKraftdAutoJoinsAndUpdatesItsEndpoint(t *testing.T) {
	q := newDynamicMixed(t)
	q.kafkaFetchTimeout = "2000"
	two := fmt.Sprintf("1@%s:%s,2@%s:%s", q.addrs[0], q.dirs[0], q.addrs[1], q.dirs[1])
	q.startKafka(1, "--initial-voters", two)
	q.startKafka(2, "--initial-voters", two)
	q.startKraftd([]string{"-no-initial-controllers", "-directory-id", q.dirs[2]})
	run := func(listen string) {
		q.kd.kill()
		q.kd.args = []string{"-wire", "kafka", "-cluster-id", q.cluster, "-id", "3", "-dir", filepath.Join(q.base, "3"), "-listen", listen,
			"-http", q.addrs[3], "-election-timeout", "500ms", "-fetch-timeout", "1s", "-election-backoff-max", "500ms",
			"-bootstrap-servers", q.addrs[0] + "," + q.addrs[1], "-auto-join"}
		q.kd.start()
	}
	run(q.addrs[2])

	l, _ := q.leader()
	q.appendAt(l, "before-join")
	q.waitVoters([]string{"1@" + q.addrs[0], "2@" + q.addrs[1], "3@" + q.addrs[2]})
	l, _ = q.leader()
	require.NotEqual(t, 3, l, "kraftd joined a quorum led by a Kafka node")
	q.appendAt(l, "after-join")
	q.waitCommitted(2)
	b, err := os.ReadFile(q.kd.log)
	require.NoError(t, err)
	require.Contains(t, string(b), "AddRaftVoter answer from", "kraftd sent AddRaftVoter itself and read the Kafka leader's answer")

	moved := freePorts(t, 1)[0]
	run(moved)
	q.waitVoters([]string{"1@" + q.addrs[0], "2@" + q.addrs[1], "3@" + moved})
	b, err = os.ReadFile(q.kd.log)
	require.NoError(t, err)
	require.Regexp(t, `UpdateRaftVoter of endpoint `+strings.ReplaceAll(moved, ".", `\.`)+` \(the voter set has `+strings.ReplaceAll(q.addrs[2], ".", `\.`)+`\) to leader [12] in epoch \d+: NONE`, string(b))
	l, _ = q.leader()
	q.appendAt(l, "after-update")
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := q.kd.status()
		if err == nil && st.State != nil && st.State.Records == 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "kraftd at its new endpoint applies the record: %+v %v", st, err)
		time.Sleep(100 * time.Millisecond)
	}
}
