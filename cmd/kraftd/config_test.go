package main

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

const threeVoters = "1@127.0.0.1:9091,2@127.0.0.1:9092,3@127.0.0.1:9093"

func args(extra ...string) []string {
	return append([]string{"-cluster-id", testClusterID, "-id", "2", "-voters", threeVoters, "-dir", "/tmp/x"}, extra...)
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := parseConfig(args())
	require.NoError(t, err)
	require.Equal(t, kraft.NodeID(2), c.id)
	require.False(t, c.observer)
	require.Equal(t, "127.0.0.1:9092", c.listen, "-listen defaults to the replica's own address")
	require.Empty(t, c.httpAddr)
	require.Equal(t, "/tmp/x", c.dir)
	require.Len(t, c.voters, 3)
	require.Equal(t, map[kraft.NodeID]string{1: "127.0.0.1:9091", 3: "127.0.0.1:9093"}, c.peers())
	require.Equal(t, time.Second, c.electionTimeout)
	require.Equal(t, 2*time.Second, c.fetchTimeout)
	require.Equal(t, time.Second, c.electionBackoffMax)
	require.Equal(t, 2*time.Second, c.requestTimeout)
	require.Equal(t, 20*time.Millisecond, c.retryBackoff)
	require.Equal(t, 500*time.Millisecond, c.fetchMaxWait)
	require.Equal(t, seedFor(2), c.seed)
	require.NotEqual(t, seedFor(1), seedFor(2))
	require.Zero(t, c.snapshotEvery, "no snapshots by default")

	kc := c.kraftConfig()
	require.NoError(t, kc.Validate())
	require.Equal(t, kraft.ReplicaKey{ID: 2}, kc.Local)
	require.False(t, kc.Observer)
	require.True(t, kc.ClusterID.Valid)
	require.Equal(t, "32453738-4541-3537-3035-324434333642", kc.ClusterID.UUID.String(), "testClusterID")
	require.Equal(t, int64(defaultReadyMaxLag), c.readyMaxLag)
	require.Empty(t, c.warnings)
	require.Equal(t, []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}, kc.Voters)
}

func TestParseConfigFlags(t *testing.T) {
	c, err := parseConfig(args("-listen", "0.0.0.0:9092", "-http", "127.0.0.1:8082",
		"-cluster-id", "MkU3OEVBNTcwNTJENDM2Qg", "-seed", "7",
		"-election-timeout", "200ms", "-fetch-timeout", "400ms", "-election-backoff-max", "300ms",
		"-retry-backoff", "5ms"))
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0:9092", c.listen)
	require.Equal(t, "127.0.0.1:8082", c.httpAddr)
	require.Equal(t, uint64(7), c.seed)
	require.Equal(t, 200*time.Millisecond, c.electionTimeout)
	require.Equal(t, 400*time.Millisecond, c.fetchTimeout)
	require.Equal(t, 300*time.Millisecond, c.electionBackoffMax)
	require.Equal(t, 5*time.Millisecond, c.retryBackoff)
	// A shorter fetch timeout keeps Kafka's ratios for the derived defaults.
	require.Equal(t, 400*time.Millisecond, c.requestTimeout)
	require.Equal(t, 100*time.Millisecond, c.fetchMaxWait)
	kc := c.kraftConfig()
	require.True(t, kc.ClusterID.Valid)
	require.Equal(t, "32453738-4541-3537-3035-324434333642", kc.ClusterID.UUID.String())

	c, err = parseConfig(args("-fetch-timeout", "400ms", "-request-timeout", "1s", "-fetch-max-wait", "50ms"))
	require.NoError(t, err)
	require.Equal(t, time.Second, c.requestTimeout)
	require.Equal(t, 50*time.Millisecond, c.fetchMaxWait)

	c, err = parseConfig(args("-snapshot-every", "1000"))
	require.NoError(t, err)
	require.Equal(t, int64(1000), c.snapshotEvery)
}

func TestParseConfigDirectoryIDs(t *testing.T) {
	const (
		dir1 = "b5f2c9d4-8a1e-4c3b-9f7d-2e6a1b0c4d8e"
		dir2 = "AAECAwQFBgcICQoLDA0ODw" // Kafka's base64 form of 00010203-...-0f
	)
	voters := "1:" + dir1 + "@127.0.0.1:9091,2:" + dir2 + "@127.0.0.1:9092,3@127.0.0.1:9093"
	c, err := parseConfig([]string{"-cluster-id", testClusterID, "-id", "2", "-voters", voters, "-dir", "d"})
	require.NoError(t, err)
	require.False(t, c.observer)
	kc := c.kraftConfig()
	require.NoError(t, kc.Validate())
	require.Equal(t, dir1, kc.Voters[0].DirectoryID.String())
	require.Equal(t, "00010203-0405-0607-0809-0a0b0c0d0e0f", kc.Voters[1].DirectoryID.String())
	require.Equal(t, kc.Voters[1], kc.Local, "the local key takes its directory id from -voters")
	require.Equal(t, kraft.ReplicaKey{ID: 3}, kc.Voters[2])

	// The same id with another directory id (a replaced disk) is an
	// observer; a voter entry without a directory id matches any.
	c, err = parseConfig([]string{"-cluster-id", testClusterID, "-id", "2", "-voters", voters, "-dir", "d", "-directory-id", dir1})
	require.NoError(t, err)
	require.True(t, c.observer)
	require.Equal(t, "127.0.0.1:0", c.listen)
	require.NoError(t, c.kraftConfig().Validate())
	c, err = parseConfig([]string{"-cluster-id", testClusterID, "-id", "3", "-voters", voters, "-dir", "d", "-directory-id", dir1})
	require.NoError(t, err)
	require.False(t, c.observer)
	require.Equal(t, dir1, c.kraftConfig().Local.DirectoryID.String())
}

func TestParseConfigObserver(t *testing.T) {
	c, err := parseConfig([]string{"-cluster-id", testClusterID, "-id", "4", "-voters", threeVoters, "-dir", "d"})
	require.NoError(t, err)
	require.True(t, c.observer)
	require.Equal(t, "127.0.0.1:0", c.listen, "an observer is never dialed: any port")
	require.Len(t, c.peers(), 3, "an observer fetches from every voter")
	kc := c.kraftConfig()
	require.True(t, kc.Observer)
	require.Equal(t, kraft.ReplicaKey{ID: 4}, kc.Local)
	require.NoError(t, kc.Validate())

	c, err = parseConfig([]string{"-cluster-id", testClusterID, "-id", "0", "-voters", threeVoters, "-dir", "d", "-listen", "127.0.0.1:9094"})
	require.NoError(t, err)
	require.True(t, c.observer)
	require.Equal(t, "127.0.0.1:9094", c.listen)
	require.NoError(t, c.kraftConfig().Validate())
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error, with the flag's name
	}{
		{[]string{"-voters", threeVoters, "-dir", "d"}, "-id is required"},
		{[]string{"-id", "1", "-dir", "d"}, "-voters is required"},
		{[]string{"-id", "1", "-voters", threeVoters}, "-dir is required"},
		{args("-nope"), "-nope"},
		{args("extra"), `unexpected argument "extra"`},
		{[]string{"-id", "x", "-voters", threeVoters, "-dir", "d"}, `-id "x": want a node id`},
		{[]string{"-id", "-1", "-voters", threeVoters, "-dir", "d"}, `-id "-1": want a node id`},
		{[]string{"-id", "2147483648", "-voters", threeVoters, "-dir", "d"}, `-id "2147483648"`},
		{[]string{"-id", "1", "-voters", "1@127.0.0.1:9091,", "-dir", "d"}, `-voters: entry ""`},
		{[]string{"-id", "1", "-voters", "127.0.0.1:9091", "-dir", "d"}, `-voters: entry "127.0.0.1:9091": want id@host:port`},
		{[]string{"-id", "1", "-voters", "a@127.0.0.1:9091", "-dir", "d"}, `-voters: entry "a@127.0.0.1:9091": id "a"`},
		{[]string{"-id", "1", "-voters", "1@127.0.0.1", "-dir", "d"}, `-voters: entry "1@127.0.0.1": address "127.0.0.1": want host:port`},
		{[]string{"-id", "1", "-voters", "1@:9091", "-dir", "d"}, `-voters: entry "1@:9091": address ":9091": want a host`},
		{[]string{"-id", "1", "-voters", "1@h:0", "-dir", "d"}, `-voters: entry "1@h:0": address "h:0": port "0"`},
		{[]string{"-id", "1", "-voters", "1@h:99999", "-dir", "d"}, `port "99999"`},
		{[]string{"-id", "1", "-voters", "1:xyz@h:1", "-dir", "d"}, `-voters: entry "1:xyz@h:1": directory id "xyz": want a UUID`},
		{[]string{"-id", "1", "-voters", "1:00000000-0000-0000-0000-000000000000@h:1", "-dir", "d"}, "zero UUID is reserved"},
		{[]string{"-id", "1", "-voters", "1@h:1,1@h:2", "-dir", "d"}, "-voters: voter id 1 appears twice"},
		{[]string{"-id", "1", "-voters", "1@h:1,2@h:1", "-dir", "d"}, "-voters: voters 1 and 2 have the same address h:1"},
		{args("-listen", "nope"), `-listen "nope": want host:port`},
		{args("-http", ""), `-http "": want host:port`},
		{args("-http", "127.0.0.1:x"), `-http "127.0.0.1:x"`},
		{args("-cluster-id", "nope"), `-cluster-id "nope": want a UUID`},
		{args("-directory-id", "nope"), `-directory-id "nope": want a UUID`},
		{args("-seed", "-1"), "-seed"},
		{args("-election-timeout", "0s"), "-election-timeout 0s: want a positive duration"},
		{args("-election-timeout", "soon"), "-election-timeout"},
		{args("-fetch-timeout", "-1s"), "-fetch-timeout -1s: want a positive duration"},
		{args("-request-timeout", "0s"), "-request-timeout 0s"},
		{args("-retry-backoff", "0s"), "-retry-backoff 0s"},
		{args("-election-backoff-max", "0s"), "-election-backoff-max 0s"},
		{args("-fetch-max-wait", "0s"), "-fetch-max-wait 0s"},
		{args("-fetch-max-wait", "2s"), "-fetch-max-wait 2s: want less than -fetch-timeout (2s)"},
		{args("-snapshot-every", "-5"), "-snapshot-every -5: want 0 (no snapshots) or a positive count"},
		{args("-snapshot-every", "many"), "-snapshot-every"},
		{args("-ready-max-lag", "-1"), "-ready-max-lag -1: want 0 or more records"},
		{[]string{"-id", "1", "-voters", threeVoters, "-dir", "d"}, "-cluster-id is required: make one for the cluster with kraftd -random-uuid"},
		{args("-config", "/nonexistent/kraftd.properties"), "-config /nonexistent/kraftd.properties: open"},
	} {
		_, err := parseConfig(tc.args)
		require.Error(t, err, "%q", tc.args)
		require.Contains(t, err.Error(), tc.want, "%q", tc.args)
		require.NotContains(t, err.Error(), "\n", "one line")
	}
}

func TestParseUUID(t *testing.T) {
	want := "00010203-0405-0607-0809-0a0b0c0d0e0f"
	for _, s := range []string{want, strings.ToUpper(want), "000102030405060708090a0b0c0d0e0f", "AAECAwQFBgcICQoLDA0ODw", "AAECAwQFBgcICQoLDA0ODw=="} {
		u, err := parseUUID(s)
		require.NoError(t, err, s)
		require.Equal(t, want, kraft.ReplicaKey{DirectoryID: u}.DirectoryID.String(), s)
	}
	for _, s := range []string{"", "00010203-0405-0607-0809-0a0b0c0d0e0", "00010203x0405-0607-0809-0a0b0c0d0e0f", "AAECAwQFBgcICQoLDA0OD!", "AAAAAAAAAAAAAAAAAAAAAA"} {
		_, err := parseUUID(s)
		require.Error(t, err, s)
	}
}

func TestRunBadFlagsAndHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"-id", "1", "-voters", "1@127.0.0.1:0", "-dir", "d"}, &stdout, &stderr, nil)
	require.Equal(t, exitBad, code)
	require.Equal(t, "kraftd: -voters: entry \"1@127.0.0.1:0\": address \"127.0.0.1:0\": port \"0\": want 1 to 65535 (kraftd -h for help)\n", stderr.String())
	require.Empty(t, stdout.String())

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, exitOK, run([]string{"-h"}, &stdout, &stderr, nil))
	require.Contains(t, stdout.String(), "Usage: kraftd")
	require.Contains(t, stdout.String(), "-election-timeout")
	require.Empty(t, stderr.String())
	_, err := parseConfig([]string{"-help"})
	require.ErrorIs(t, err, flag.ErrHelp)
}

// TestRunSingleVoter runs kraftd in-process as the only voter: it elects
// itself, serves the HTTP API, and stops with status 0 on a signal.
func TestRunSingleVoter(t *testing.T) {
	ports := make([]string, 2)
	for i := range ports {
		ports[i] = freeAddr(t)
	}
	dir := t.TempDir()
	sigs := make(chan os.Signal, 1)
	var stderr syncBuffer
	code := make(chan int, 1)
	args := formatted(t, []string{
		"-cluster-id", testClusterID, "-id", "1", "-voters", "1@" + ports[0], "-dir", dir, "-http", ports[1],
		"-election-timeout", "50ms", "-fetch-timeout", "100ms",
	})
	go func() { code <- run(args, os.Stdout, &stderr, sigs) }()
	url := "http://" + ports[1]
	var offset int64
	require.Eventually(t, func() bool {
		c, body := httpPost(t, url+"/append", "hello")
		if c != 200 {
			return false
		}
		offset = decodeOffset(t, body)
		return true
	}, 10*time.Second, 10*time.Millisecond, "no append succeeded")
	require.Equal(t, int64(1), offset, "offset 0 is the LeaderChange record")
	c, body := httpPost(t, url+"/append", "world")
	require.Equal(t, 200, c)
	require.Equal(t, int64(2), decodeOffset(t, body))

	sigs <- os.Interrupt
	select {
	case c := <-code:
		require.Equal(t, exitOK, c, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("kraftd did not stop:\n%s", stderr.String())
	}
	out := stderr.String()
	require.Contains(t, out, `msg="Candidate -> Leader in epoch 1, leader 1 (won election)" node=1 event=role_changed`)
	require.Contains(t, out, "kraftd: stopped")
}

// TestParseConfigDynamic: -initial-voters, -bootstrap-servers and
// -auto-join ask for a dynamic quorum: no static voters, the peers and
// bootstrap servers from the lists.
func TestParseConfigDynamic(t *testing.T) {
	const dir1 = "b5f2c9d4-8a1e-4c3b-9f7d-2e6a1b0c4d8e"
	initial := "1:" + dir1 + "@127.0.0.1:9091"
	c, err := parseConfig([]string{"-cluster-id", testClusterID, "-id", "1", "-initial-voters", initial, "-dir", "d"})
	require.NoError(t, err)
	require.True(t, c.dynamic)
	require.False(t, c.observer)
	require.Equal(t, "127.0.0.1:9091", c.listen)
	kc := c.kraftConfig()
	require.Empty(t, kc.Voters)
	require.Equal(t, dir1, kc.Local.DirectoryID.String())
	require.Len(t, c.nodeInitialVoters(), 1)
	require.Equal(t, "127.0.0.1:9091", c.nodeInitialVoters()[0].Endpoint)
	require.Empty(t, c.bootstrapIDs(), "the only initial voter has no one to ask")

	c, err = parseConfig([]string{"-cluster-id", testClusterID, "-id", "2", "-bootstrap-servers", "1@127.0.0.1:9091", "-auto-join", "-listen", "127.0.0.1:9092", "-dir", "d"})
	require.NoError(t, err)
	require.True(t, c.dynamic)
	require.True(t, c.observer)
	require.True(t, c.kraftConfig().AutoJoin)
	require.True(t, c.kraftConfig().Observer)
	require.Equal(t, []kraft.NodeID{1}, c.bootstrapIDs())
	require.Equal(t, map[kraft.NodeID]string{1: "127.0.0.1:9091"}, c.peers())
	require.Nil(t, c.nodeInitialVoters())

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-id", "1", "-voters", threeVoters, "-initial-voters", initial, "-dir", "d"}, "-voters (a static voter set) with"},
		{[]string{"-id", "1", "-voters", threeVoters, "-auto-join", "-dir", "d"}, "-auto-join needs a dynamic quorum"},
		{[]string{"-id", "1", "-initial-voters", "1@127.0.0.1:9091", "-dir", "d"}, "-initial-voters: voter 1 has no directory id"},
		{[]string{"-id", "1", "-bootstrap-servers", "x", "-dir", "d"}, "-bootstrap-servers:"},
	} {
		_, err := parseConfig(tc.args)
		require.Error(t, err, "%q", tc.args)
		require.Contains(t, err.Error(), tc.want, "%q", tc.args)
	}
}

// TestParseConfigKafkaFormats: with -wire kafka too, -initial-voters takes
// Kafka's ID@HOST:PORT:DIRECTORY-ID (kafka-storage format
// --initial-controllers, base64 directory ids, IPv6 in brackets) and
// -bootstrap-servers Kafka's HOST:PORT list without ids, which get ids
// -2, -3, ... as in Kafka's QuorumConfig (D159).
func TestParseConfigKafkaFormats(t *testing.T) {
	const d1, d2 = "a3JhZnQAAAAAAAAAAAAQAQ", "a3JhZnQAAAAAAAAAAAAQAg"
	initial := "1@127.0.0.1:9091:" + d1 + ",2@[::1]:9092:" + d2
	c, err := parseConfig([]string{"-cluster-id", testClusterID, "-id", "1", "-wire", "kafka", "-initial-voters", initial, "-dir", "d"})
	require.NoError(t, err)
	require.Equal(t, wireKafka, c.wire)
	require.True(t, c.dynamic)
	require.Equal(t, "127.0.0.1:9091", c.listen)
	vs := c.nodeInitialVoters()
	require.Len(t, vs, 2)
	require.Equal(t, "6b726166-7400-0000-0000-000000001001", vs[0].Key.DirectoryID.String())
	require.Equal(t, "[::1]:9092", vs[1].Endpoint)
	require.Equal(t, "6b726166-7400-0000-0000-000000001002", vs[1].Key.DirectoryID.String())
	require.Equal(t, vs[0].Key.DirectoryID, c.kraftConfig().Local.DirectoryID)

	c, err = parseConfig([]string{"-cluster-id", testClusterID, "-id", "3", "-wire", "kafka", "-bootstrap-servers", "127.0.0.1:9091,127.0.0.1:9092", "-listen", "127.0.0.1:9093", "-dir", "d"})
	require.NoError(t, err)
	require.True(t, c.observer)
	require.Equal(t, []kraft.NodeID{-2, -3}, c.bootstrapIDs())
	require.Equal(t, map[kraft.NodeID]string{-2: "127.0.0.1:9091", -3: "127.0.0.1:9092"}, c.peers())

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-id", "1", "-initial-voters", "1:" + d1 + "@h:1:" + d2, "-dir", "d"}, "two directory ids"},
		{[]string{"-id", "1", "-initial-voters", "1@h:1:nope", "-dir", "d"}, `directory id "nope"`},
		{[]string{"-id", "1", "-initial-voters", "h:1", "-dir", "d"}, "want id@host:port"},
		{[]string{"-id", "1", "-bootstrap-servers", "h", "-dir", "d"}, `entry "h": address`},
	} {
		_, err := parseConfig(tc.args)
		require.Error(t, err, "%q", tc.args)
		require.Contains(t, err.Error(), tc.want, "%q", tc.args)
	}
}
