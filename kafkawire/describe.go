package kafkawire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchTracker keeps, per replica that fetches from this one, what Kafka's
// LeaderState.ReplicaState keeps for DescribeQuorum (docs/design.md D82):
// the offset of its latest Fetch, when it came, and when it last fetched
// from the log end (caught up: a Fetch answered with no records and no
// error). The runtime does not report fetch times; the transport sees
// every Fetch and its answer.
type fetchTracker struct {
	mu       sync.Mutex
	replicas map[kraft.NodeID]*fetchState
}

type fetchState struct {
	offset     int64
	lastFetch  int64 // ms since the epoch
	lastCaught int64 // -1: never
}

func (f *fetchTracker) fetched(id kraft.NodeID, offset int64, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.replicas == nil {
		f.replicas = map[kraft.NodeID]*fetchState{}
	}
	s := f.replicas[id]
	if s == nil {
		s = &fetchState{lastCaught: -1}
		f.replicas[id] = s
	}
	s.offset, s.lastFetch = offset, at.UnixMilli()
}

func (f *fetchTracker) caughtUp(id kraft.NodeID, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.replicas[id]; s != nil {
		s.lastCaught = at.UnixMilli()
	}
}

func (f *fetchTracker) get(id kraft.NodeID) (fetchState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.replicas[id]
	if !ok {
		return fetchState{}, false
	}
	return *s, true
}

func (f *fetchTracker) ids() []kraft.NodeID {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []kraft.NodeID
	for id := range f.replicas {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ServeDescribeQuorum makes the transport answer DescribeQuorum requests
// from nd's status, as Kafka's leader does (KafkaRaftClient
// handleDescribeQuorumRequest): on the leader, the leader id and epoch,
// the high watermark, each voter's log end offset and last fetch and
// caught-up timestamps, the replicas that fetch without being voters as
// observers, and (v2) each node's CONTROLLER endpoint; on any other role a
// partition error NOT_LEADER_OR_FOLLOWER.
func (t *Transport) ServeDescribeQuorum(nd *node.Node) {
	t.mu.Lock()
	t.cfg.Describe = func() (*kmsg.DescribeQuorumResponse, error) {
		st, err := nd.Status()
		if err != nil {
			return nil, err
		}
		return t.describeStatus(st, time.Now()), nil
	}
	t.mu.Unlock()
}

// describeStatus is the DescribeQuorum answer of a replica in status st.
func (t *Transport) describeStatus(st node.Status, now time.Time) *kmsg.DescribeQuorumResponse {
	r := kmsg.NewPtrDescribeQuorumResponse()
	empty := ""
	r.ErrorMessage = &empty
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.Partition = MetadataPartition
	p.ErrorMessage = &empty
	topic := kmsg.NewDescribeQuorumResponseTopic()
	topic.Topic = MetadataTopic
	if st.Role != kraft.Leader.String() {
		return notLeaderDescribe()
	}
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = int32(st.ID), int32(st.Epoch), st.HighWatermark
	voters := map[kraft.NodeID]bool{}
	ms := now.UnixMilli()
	for _, v := range st.Voters {
		voters[v.ID] = true
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID = int32(v.ID)
		rs.ReplicaDirectoryID = directoryOf(st, v.ID)
		rs.LogEndOffset = v.EndOffset
		rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = -1, -1
		if v.ID == st.ID {
			rs.LogEndOffset = st.LogEnd
			rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = ms, ms
		} else if f, ok := t.fetches.get(v.ID); ok {
			rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = f.lastFetch, f.lastCaught
		}
		p.CurrentVoters = append(p.CurrentVoters, rs)
	}
	p.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	for _, id := range t.fetches.ids() {
		if voters[id] || id < 0 {
			continue
		}
		f, _ := t.fetches.get(id)
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID = int32(id)
		rs.LogEndOffset = f.offset
		rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = f.lastFetch, f.lastCaught
		p.Observers = append(p.Observers, rs)
	}
	topic.Partitions = []kmsg.DescribeQuorumResponseTopicPartition{p}
	r.Topics = []kmsg.DescribeQuorumResponseTopic{topic}
	for _, rs := range append(append([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState(nil), p.CurrentVoters...), p.Observers...) {
		for _, ep := range t.endpointOf(kraft.NodeID(rs.ReplicaID)) {
			r.Nodes = append(r.Nodes, kmsg.DescribeQuorumResponseNode{
				NodeID:    rs.ReplicaID,
				Listeners: []kmsg.DescribeQuorumResponseNodeListener{{Name: ep.Name, Host: ep.Host, Port: ep.Port}},
			})
		}
	}
	return r
}

// notLeaderDescribe is the DescribeQuorum answer of a replica that does not
// lead: a partition error NOT_LEADER_OR_FOLLOWER (Kafka's
// DescribeQuorumResponse.singletonErrorResponse).
func notLeaderDescribe() *kmsg.DescribeQuorumResponse {
	r := kmsg.NewPtrDescribeQuorumResponse()
	empty := ""
	r.ErrorMessage = &empty
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.Partition = MetadataPartition
	p.ErrorCode = int16(kraft.ErrNotLeaderOrFollower)
	msg := kraft.ErrNotLeaderOrFollower.String()
	p.ErrorMessage = &msg
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = -1, -1, -1
	p.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	p.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	topic := kmsg.NewDescribeQuorumResponseTopic()
	topic.Topic = MetadataTopic
	topic.Partitions = []kmsg.DescribeQuorumResponseTopicPartition{p}
	r.Topics = []kmsg.DescribeQuorumResponseTopic{topic}
	return r
}

// directoryOf is voter id's directory id in the status's voter set.
func directoryOf(st node.Status, id kraft.NodeID) [16]byte {
	for _, v := range st.VoterSet {
		if v.ID == id {
			return v.DirectoryID
		}
	}
	return [16]byte{}
}

// Describe asks the replica at addr for its view of the quorum, as
// kafka-metadata-quorum describe does: ApiVersions first, then
// DescribeQuorum at the highest version both support.
func Describe(ctx context.Context, addr string) (*kmsg.DescribeQuorumResponse, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	client := "kraft-describe"
	r := bufio.NewReader(c)
	call := func(corr int32, req kmsg.Request) (kmsg.Response, error) {
		if _, err := c.Write(AppendRequest(nil, corr, &client, req)); err != nil {
			return nil, err
		}
		frame, err := ReadFrame(r, 0)
		if err != nil {
			return nil, err
		}
		got, resp, err := ReadResponse(frame, req.Key(), req.GetVersion())
		if err != nil {
			return nil, err
		}
		if got != corr {
			return nil, fmt.Errorf("kafkawire: correlation id %d, expected %d", got, corr)
		}
		return resp, nil
	}
	resp, err := call(0, APIVersionsRequest(Supported[APIVersions].Max, DefaultSoftwareVersion))
	if err != nil {
		return nil, err
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if v, retry, err := APIVersionsRetry(av); err != nil {
		return nil, err
	} else if retry {
		if resp, err = call(1, APIVersionsRequest(v, DefaultSoftwareVersion)); err != nil {
			return nil, err
		}
		av = resp.(*kmsg.ApiVersionsResponse)
	}
	v, ok := Negotiate(Supported, VersionsOf(av))[DescribeQuorum]
	if !ok {
		return nil, errors.New("kafkawire: the replica does not support DescribeQuorum")
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = v
	req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: MetadataPartition}}}}
	resp, err = call(2, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.DescribeQuorumResponse), nil
}
