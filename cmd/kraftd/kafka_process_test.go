//go:build unix

package main

import (
	"context"
	"testing"
	"time"

	"github.com/kraftquorum/kraft/kafkawire"
	"github.com/stretchr/testify/require"
)

// TestProcessKafkaWire runs three kraftd processes in Kafka's wire
// protocol (-wire kafka) with snapshots: appends through the HTTP API are
// acknowledged, the leader is killed with SIGKILL and another one
// acknowledges appends, the killed one rejoins, and the leader answers
// DescribeQuorum as Kafka's leader does.
func TestProcessKafkaWire(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	c := newCluster(t, buildKraftd(t), 3)
	for _, id := range c.ids {
		c.procs[id].args = append(c.procs[id].args, "-wire", "kafka", "-snapshot-every", "50")
	}
	c.startAll()
	leader, _ := c.waitLeader(10 * time.Second)
	cl := startClient(c, 2)
	_, ok := cl.waitAck(time.Now(), 0, 10*time.Second)
	require.True(t, ok, "no append acknowledged")
	killed := time.Now()
	c.procs[leader].kill()
	a, ok := cl.waitAck(killed, leader, 10*time.Second)
	require.True(t, ok, "no append acknowledged after the leader's kill")
	t.Logf("after the kill of leader %d, %d acknowledged an append after %v", leader, a.from, a.at.Sub(killed).Round(time.Millisecond))
	c.procs[leader].start()
	_, ok = c.waitRejoined(c.procs[leader], time.Now(), 10*time.Second)
	require.True(t, ok, "the killed leader did not rejoin")
	cl.stop()
	sts := c.waitConverged(10 * time.Second)
	for id, st := range sts {
		if st.Role != "Leader" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := kafkawire.Describe(ctx, c.procs[id].raft)
		cancel()
		require.NoError(t, err)
		p := r.Topics[0].Partitions[0]
		require.Equal(t, int16(0), p.ErrorCode)
		require.Equal(t, int32(id), p.LeaderID)
		require.Equal(t, int32(st.Epoch), p.LeaderEpoch)
		require.Equal(t, st.HighWatermark, p.HighWatermark)
		require.Len(t, p.CurrentVoters, 3)
		for _, v := range p.CurrentVoters {
			require.Equal(t, st.LogEnd, v.LogEndOffset, "voter %d", v.ReplicaID)
		}
		require.Len(t, r.Nodes, 3)
	}
}
