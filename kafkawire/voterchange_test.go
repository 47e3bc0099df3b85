package kafkawire

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The AddRaftVoter and UpdateRaftVoter handlers (ServeVoterChanges) on a
// transport whose listener name is not CONTROLLER, driven by hand as a
// Kafka client (kafka-metadata-quorum, a Kafka controller) would, with no
// Kafka node (docs/design.md D160, D260, D310).

// voterListenerName is the transport's listener name in these tests:
// Kafka's controller.listener.names may name any listener.
const voterListenerName = "CTRL"

// dynKafkaKey is replica id's key in these tests.
func dynKafkaKey(id kraft.NodeID) kraft.ReplicaKey {
	return kraft.ReplicaKey{ID: id, DirectoryID: uuid.UUID{0xd7, byte(id), 15: 1}}
}

// kafkaReplica is a kraft runtime over a Transport, its log in memory.
type kafkaReplica struct {
	nd  *node.Node
	tr  *Transport
	log *storage.MemLog
}

// startKafkaReplica starts replica id on a Transport under listener: the
// one voter of a dynamic quorum it bootstraps at its own address when
// leader is kraft.NoNode, else an observer that knows leader at
// leaderAddr.
func startKafkaReplica(t *testing.T, id kraft.NodeID, listener string, leader kraft.NodeID, leaderAddr string) *kafkaReplica {
	t.Helper()
	tr, err := NewTransport(TransportConfig{ID: id, DirectoryID: dynKafkaKey(id).DirectoryID, Listen: "127.0.0.1:0", ListenerName: listener, Logf: t.Logf})
	require.NoError(t, err)
	r := &kafkaReplica{tr: tr, log: storage.NewMemLog()}
	var boot []replica.Voter
	if leader == kraft.NoNode {
		boot = []replica.Voter{{Key: dynKafkaKey(id), Endpoint: tr.Addr().String(), KRaftVersions: replica.SupportedKRaftVersions}}
	}
	cfg := node.Config{Config: replica.Config{Kraft: kraft.Config{
		Local: dynKafkaKey(id), Seed: uint64(id) * 7919,
		ElectionTimeout: 150 * time.Millisecond, FetchTimeout: 300 * time.Millisecond, ElectionBackoffMax: 100 * time.Millisecond,
		RequestTimeout: 5 * time.Second,
	},
		Log: r.log, Records: &node.MemRecords{}, Endpoint: tr.Addr().String(),
		RequestTimeout: 300 * time.Millisecond, FetchMaxWait: 50 * time.Millisecond},
		Transport: tr, Logf: t.Logf, InitialVoters: boot,
	}
	if boot == nil {
		cfg.Kraft.Observer = true
		cfg.BootstrapServers = []kraft.NodeID{leader}
		tr.SetPeer(leader, leaderAddr)
	}
	r.nd, err = node.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.nd.Close() })
	return r
}

// startKafkaLeader starts replica 1, the one voter of a dynamic quorum,
// serving the voter changes, and waits until it leads with its first
// VotersRecord committed.
func startKafkaLeader(t *testing.T, listener string) *kafkaReplica {
	t.Helper()
	r := startKafkaReplica(t, 1, listener, kraft.NoNode, "")
	r.tr.ServeVoterChanges(r.nd, uuid.NullUUID{})
	require.Eventually(t, func() bool {
		st, err := r.nd.Status()
		return err == nil && st.Role == kraft.Leader.String() && st.HighWatermark == st.LogEnd && st.LogEnd >= 3
	}, 10*time.Second, 10*time.Millisecond)
	return r
}

// lastVoters is the voter set of the last VotersRecord in r's log.
func (r *kafkaReplica) lastVoters(t *testing.T) []replica.Voter {
	t.Helper()
	entries, err := r.log.Read(r.log.Start().Offset, 1<<30)
	require.NoError(t, err)
	var vs []replica.Voter
	for _, e := range entries {
		if len(e.Data) > 0 && e.Data[0] == replica.RecordVoters {
			vs, err = replica.DecodeVoters(e.Data[1:])
			require.NoError(t, err)
		}
	}
	require.NotNil(t, vs, "no VotersRecord in the log")
	return vs
}

func voterOf(t *testing.T, vs []replica.Voter, id kraft.NodeID) replica.Voter {
	t.Helper()
	for _, v := range vs {
		if v.Key.ID == id {
			return v
		}
	}
	t.Fatalf("voter %d not in %+v", id, vs)
	return replica.Voter{}
}

func hostPort(t *testing.T, addr string) (string, uint16) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.ParseUint(p, 10, 16)
	require.NoError(t, err)
	return host, uint16(port)
}

// TestUpdateRaftVoterListenersReachTheVoterInKafkasOrder: an
// UpdateRaftVoter naming three listeners, the transport's listener name's
// second, is answered NONE with the leader's endpoint as CurrentLeader;
// the VotersRecord the leader writes keeps all three in the request's
// order as replica.Voter.Listeners, with Endpoint (what kraft dials) the
// one under the transport's listener name; and a Fetch answer carries
// Kafka's VotersRecords under that name: the bootstrap voter's one
// listener is CTRL, not CONTROLLER (docs/design.md D260, D310).
func TestUpdateRaftVoterListenersReachTheVoterInKafkasOrder(t *testing.T) {
	leader := startKafkaLeader(t, voterListenerName)
	st, err := leader.nd.Status()
	require.NoError(t, err)

	want := []replica.Listener{
		{Name: "EXTERNAL", Host: "e1", Port: 19092},
		{Name: voterListenerName, Host: "c1", Port: 9094},
		{Name: "REPLICATION", Host: "r1", Port: 9095},
	}
	q := kmsg.NewPtrUpdateRaftVoterRequest()
	q.CurrentLeaderEpoch = int32(st.Epoch)
	q.VoterID, q.VoterDirectoryID = 1, dynKafkaKey(1).DirectoryID
	for _, l := range want {
		q.Listeners = append(q.Listeners, kmsg.UpdateRaftVoterRequestListener{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	q.KRaftVersionFeature.MinSupportedVersion, q.KRaftVersionFeature.MaxSupportedVersion = 0, 1
	client := dialRaw(t, leader.tr.Addr().String())
	resp := client.call(q, 0).(*kmsg.UpdateRaftVoterResponse)
	require.Equal(t, int16(kraft.ErrNone), resp.ErrorCode)
	host, port := hostPort(t, leader.tr.Addr().String())
	require.Equal(t, int32(1), resp.CurrentLeader.LeaderID)
	require.Equal(t, int32(st.Epoch), resp.CurrentLeader.LeaderEpoch)
	require.Equal(t, host, resp.CurrentLeader.Host)
	require.Equal(t, int32(port), resp.CurrentLeader.Port)

	v := voterOf(t, leader.lastVoters(t), 1)
	require.Equal(t, want, v.Listeners)
	require.Equal(t, "c1:9094", v.Endpoint)

	// The records as a follower fetches them, in Kafka's encoding.
	fetch, err := EncodeRequest(Msg{Event: kraft.ReceiveFetch{
		From: 2, FromDirectoryID: dynKafkaKey(2).DirectoryID, CurrentLeaderEpoch: st.Epoch, FetchOffset: 0,
	}, MaxWaitMs: 0, MaxBytes: 1 << 20}, 17)
	require.NoError(t, err)
	fr := client.call(fetch, 17).(*kmsg.FetchResponse)
	require.Len(t, fr.Topics, 1)
	require.Len(t, fr.Topics[0].Partitions, 1)
	// Read under a name no listener has, every list comes back whole.
	entries, _, err := Format{ListenerName: "NONE"}.ReadEntries(fr.Topics[0].Partitions[0].RecordBatches)
	require.NoError(t, err)
	var sets [][]replica.Voter
	for _, e := range entries {
		if e.Data[0] == replica.RecordVoters {
			vs, err := replica.DecodeVoters(e.Data[1:])
			require.NoError(t, err)
			sets = append(sets, vs)
		}
	}
	require.Len(t, sets, 2, "the first leader's VotersRecord and the update's")
	require.Equal(t, []replica.Listener{{Name: voterListenerName, Host: host, Port: port}}, sets[0][0].Listeners)
	require.Equal(t, want, sets[1][0].Listeners)
	// And under the transport's name, as a Kafka replica reads them.
	entries, _, err = leader.tr.Format().ReadEntries(fr.Topics[0].Partitions[0].RecordBatches)
	require.NoError(t, err)
	var last []replica.Voter
	for _, e := range entries {
		if e.Data[0] == replica.RecordVoters {
			last, err = replica.DecodeVoters(e.Data[1:])
			require.NoError(t, err)
		}
	}
	require.Equal(t, "c1:9094", last[0].Endpoint)
	require.Equal(t, want, last[0].Listeners)
}

// TestAddRaftVoterListenersReachTheVoterAndKraftDialsTheirListener: an
// AddRaftVoter naming three listeners, the transport's listener name's
// second (a running observer's) and the others at addresses where
// nothing listens, is carried out (the leader's ApiVersions reaches the
// new voter at the CTRL listener, and it catches up) and answered NONE;
// the voter's Listeners are the request's in its order, its Endpoint the
// CTRL one (docs/design.md D260, D310).
func TestAddRaftVoterListenersReachTheVoterAndKraftDialsTheirListener(t *testing.T) {
	leader, observer, want := addKafkaVoter(t)
	v := voterOf(t, leader.lastVoters(t), 2)
	require.Equal(t, want, v.Listeners)
	require.Equal(t, observer.tr.Addr().String(), v.Endpoint)
	// The new voter's log holds the same.
	require.Eventually(t, func() bool {
		vs, err := observer.nd.Status()
		return err == nil && len(vs.VoterSet) == 2
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, want, voterOf(t, observer.lastVoters(t), 2).Listeners)
}

// addKafkaVoter starts a leader (startKafkaLeader) and replica 2, an
// observer, and adds replica 2 with an AddRaftVoter naming three
// listeners, CTRL (its transport's) second and the others at addresses
// where nothing listens; it returns them and the listeners.
func addKafkaVoter(t *testing.T) (*kafkaReplica, *kafkaReplica, []replica.Listener) {
	t.Helper()
	leader := startKafkaLeader(t, voterListenerName)
	observer := startKafkaReplica(t, 2, voterListenerName, 1, leader.tr.Addr().String())
	host, port := hostPort(t, observer.tr.Addr().String())
	dead := func() uint16 { // a port where nothing listens
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		_, p := hostPort(t, l.Addr().String())
		require.NoError(t, l.Close())
		return p
	}
	want := []replica.Listener{
		{Name: "EXTERNAL", Host: "127.0.0.1", Port: dead()},
		{Name: voterListenerName, Host: host, Port: port},
		{Name: "REPLICATION", Host: "127.0.0.1", Port: dead()},
	}
	q := kmsg.NewPtrAddRaftVoterRequest()
	q.TimeoutMillis = 10000
	q.VoterID, q.VoterDirectoryID = 2, dynKafkaKey(2).DirectoryID
	for _, l := range want {
		q.Listeners = append(q.Listeners, kmsg.AddRaftVoterRequestListener{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	client := dialRaw(t, leader.tr.Addr().String())
	_ = client.c.SetDeadline(time.Now().Add(15 * time.Second))
	resp := client.call(q, 0).(*kmsg.AddRaftVoterResponse)
	require.Equal(t, int16(kraft.ErrNone), resp.ErrorCode, "%v", resp.ErrorMessage)
	return leader, observer, want
}

// fakeLeader is a hand-written Kafka server that answers ApiVersions
// (Supported, kraft.version 0-1) and each UpdateRaftVoter with answer,
// handing the requests to got.
func fakeLeader(t *testing.T, answer func(*kmsg.UpdateRaftVoterRequest) *kmsg.UpdateRaftVoterResponse) (string, chan *kmsg.UpdateRaftVoterRequest) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	got := make(chan *kmsg.UpdateRaftVoterRequest, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				kv := replica.SupportedKRaftVersions
				for {
					frame, err := ReadFrame(c, 0)
					if err != nil {
						return
					}
					h, req, err := ReadRequest(frame)
					if err != nil {
						return
					}
					var resp kmsg.Response
					switch q := req.(type) {
					case *kmsg.ApiVersionsRequest:
						resp = APIVersionsAnswer(h.APIVersion, &kv)
					case *kmsg.UpdateRaftVoterRequest:
						got <- q
						r := answer(q)
						r.Version = q.Version
						resp = r
					default:
						return
					}
					if _, err := c.Write(AppendResponse(nil, h.CorrelationID, resp)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String(), got
}

// TestUpdateRaftVoterGoesToTheLeaderANotLeaderAnswerNames: a voter whose
// endpoint moved sends UpdateRaftVoter to the leader its node follows; an
// answer NOT_LEADER_OR_FOLLOWER whose CurrentLeader names replica 3 in a
// newer epoch, at an endpoint the transport did not know, sends it once
// more to replica 3 in that epoch with the voter's listener, and its
// answer NONE ends the updates for that leader and epoch (docs/design.md
// D171, D311).
func TestUpdateRaftVoterGoesToTheLeaderANotLeaderAnswerNames(t *testing.T) {
	_, voter, _ := addKafkaVoter(t)
	var st node.Status
	require.Eventually(t, func() bool {
		var err error
		st, err = voter.nd.Status()
		return err == nil && st.Role == kraft.Follower.String() && st.Leader == 1 && len(st.VoterSet) == 2 && st.KRaftVersion == 1
	}, 5*time.Second, 10*time.Millisecond)

	named, toNamed := fakeLeader(t, func(*kmsg.UpdateRaftVoterRequest) *kmsg.UpdateRaftVoterResponse {
		r := kmsg.NewPtrUpdateRaftVoterResponse()
		r.CurrentLeader.LeaderID, r.CurrentLeader.LeaderEpoch = 3, int32(st.Epoch)+1
		return r
	})
	newHost, newPort := hostPort(t, named)
	old, toOld := fakeLeader(t, func(*kmsg.UpdateRaftVoterRequest) *kmsg.UpdateRaftVoterResponse {
		r := kmsg.NewPtrUpdateRaftVoterResponse()
		r.ErrorCode = int16(kraft.ErrNotLeaderOrFollower)
		r.CurrentLeader.LeaderID, r.CurrentLeader.LeaderEpoch = 3, int32(st.Epoch)+1
		r.CurrentLeader.Host, r.CurrentLeader.Port = newHost, int32(newPort)
		return r
	})
	// Replica 2's transport at a new address: the voter set has its old
	// one. It reaches "leader 1" at the fake, which answers that it no
	// longer leads.
	moved, err := NewTransport(TransportConfig{
		ID: 2, DirectoryID: dynKafkaKey(2).DirectoryID, Listen: "127.0.0.1:0", ListenerName: voterListenerName,
		Peers: map[kraft.NodeID]string{1: old}, Logf: t.Logf,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = moved.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var done leaderEpoch
	sent, a := moved.updateEndpoint(ctx, voter.nd, uuid.NullUUID{}, &done)
	require.True(t, sent)
	require.Equal(t, kraft.ErrNone, a.Code)
	require.Equal(t, leaderEpoch{3, st.Epoch + 1}, done)

	first := <-toOld
	require.Equal(t, int32(st.Epoch), first.CurrentLeaderEpoch)
	again := <-toNamed
	require.Equal(t, int32(st.Epoch)+1, again.CurrentLeaderEpoch)
	require.Equal(t, int32(2), again.VoterID)
	require.Equal(t, dynKafkaKey(2).DirectoryID, uuid.UUID(again.VoterDirectoryID))
	host, port := hostPort(t, moved.Addr().String())
	require.Equal(t, []kmsg.UpdateRaftVoterRequestListener{{Name: voterListenerName, Host: host, Port: port}}, again.Listeners)
}
