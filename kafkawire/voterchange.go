package kafkawire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/replica"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// VoterChangeWait bounds how long the transport waits for the node's
// answer to a voter change (the leader answers AddRaftVoter and
// RemoveRaftVoter once the change commits, or with REQUEST_TIMED_OUT);
// past it the answer is REQUEST_TIMED_OUT.
const VoterChangeWait = 30 * time.Second

// ServeVoterChanges makes the transport answer AddRaftVoter,
// RemoveRaftVoter and UpdateRaftVoter v0 (KIP-853) from nd, as Kafka's
// leader does (AddVoterHandler, RemoveVoterHandler, UpdateVoterHandler):
// the request is checked as Kafka checks it (cluster id, a voter key with
// a directory id, an endpoint under the transport's listener name,
// UpdateRaftVoter's leader epoch), carried out by nd.AddVoter,
// nd.RemoveVoter or nd.UpdateVoter (whose kraft state answers
// DUPLICATE_VOTER, VOTER_NOT_FOUND, REQUEST_TIMED_OUT, ... with Kafka's
// rules), and answered with Kafka's codes: NONE with the message "NONE"
// once committed (UpdateRaftVoter: once written), NOT_LEADER_OR_FOLLOWER
// with an empty message, an error's name otherwise; UpdateRaftVoter's
// answer carries CurrentLeader, the leader's endpoint. Without it the
// three requests close the connection (docs/design.md D160).
func (t *Transport) ServeVoterChanges(nd *node.Node, clusterID uuid.NullUUID) {
	vs := Versions{}
	for k, v := range t.cfg.Versions {
		vs[k] = v
	}
	for _, k := range []int16{AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter} {
		vs[k] = Supported[k]
	}
	t.mu.Lock()
	t.voterChanges = &voterChanges{nd: nd, cluster: clusterID, versions: vs}
	t.mu.Unlock()
}

// served is the version table the transport serves and advertises: the
// configured one, with the voter changes once ServeVoterChanges was
// called.
func (t *Transport) served() Versions {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.voterChanges != nil {
		return t.voterChanges.versions
	}
	return t.cfg.Versions
}

type voterChanges struct {
	nd       *node.Node
	cluster  uuid.NullUUID
	versions Versions // what the transport serves with them
}

// voterChange answers a voter-change request, off the connection's reader.
func (t *Transport) voterChange(c *conn, corr int32, req kmsg.Request) {
	t.mu.Lock()
	vc := t.voterChanges
	t.mu.Unlock()
	var resp kmsg.Response
	switch q := req.(type) {
	case *kmsg.AddRaftVoterRequest:
		r := kmsg.NewPtrAddRaftVoterResponse()
		r.Version = q.Version
		code, msg := t.addVoter(vc, q)
		r.ErrorCode, r.ErrorMessage = int16(code), &msg
		resp = r
	case *kmsg.RemoveRaftVoterRequest:
		r := kmsg.NewPtrRemoveRaftVoterResponse()
		r.Version = q.Version
		code, msg := t.removeVoter(vc, q)
		r.ErrorCode, r.ErrorMessage = int16(code), &msg
		resp = r
	case *kmsg.UpdateRaftVoterRequest:
		r := kmsg.NewPtrUpdateRaftVoterResponse()
		r.Version = q.Version
		r.ErrorCode = int16(t.updateVoter(vc, q))
		r.CurrentLeader = t.currentLeader(vc.nd)
		resp = r
	}
	t.answer(c, corr, resp)
}

func (t *Transport) checkCluster(vc *voterChanges, id *string) (kraft.ErrorCode, string) {
	if id == nil {
		return kraft.ErrNone, ""
	}
	got, err := ParseClusterID(id)
	if err != nil || !vc.cluster.Valid || got != vc.cluster {
		return kraft.ErrInconsistentClusterID, kraft.ErrInconsistentClusterID.String()
	}
	return kraft.ErrNone, ""
}

// listenerEndpoint is the host:port of the listener under the transport's
// listener name among a request's listeners.
func (t *Transport) listenerEndpoint(names, hosts []string, ports []uint16) (string, bool) {
	for i := range names {
		if names[i] == t.self.Name {
			return net.JoinHostPort(hosts[i], strconv.Itoa(int(ports[i]))), true
		}
	}
	return "", false
}

func (t *Transport) addVoter(vc *voterChanges, q *kmsg.AddRaftVoterRequest) (kraft.ErrorCode, string) {
	if code, msg := t.checkCluster(vc, q.ClusterID); code != kraft.ErrNone {
		return code, msg
	}
	var names, hosts []string
	var ports []uint16
	for _, l := range q.Listeners {
		names, hosts, ports = append(names, l.Name), append(hosts, l.Host), append(ports, l.Port)
	}
	ep, ok := t.listenerEndpoint(names, hosts, ports)
	var ls []replica.Listener
	for _, l := range q.Listeners {
		ls = append(ls, replica.Listener{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	key := kraft.ReplicaKey{ID: kraft.NodeID(q.VoterID), DirectoryID: q.VoterDirectoryID}
	if q.VoterID < 0 || key.DirectoryID == uuid.Nil || !ok {
		return kraft.ErrInvalidRequest, fmt.Sprintf("AddRaftVoter of %v needs a voter id, a directory id and a %s listener", key, t.self.Name)
	}
	wait := VoterChangeWait
	if q.TimeoutMillis > 0 && time.Duration(q.TimeoutMillis)*time.Millisecond < wait {
		wait = time.Duration(q.TimeoutMillis) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	// Every listener goes into the VotersRecord, as Kafka's AddVoterHandler
	// writes the request's (D260).
	return answerOf(vc.nd.AddVoterListeners(ctx, key, ep, t.Format().kraftListeners(ls)))
}

func (t *Transport) removeVoter(vc *voterChanges, q *kmsg.RemoveRaftVoterRequest) (kraft.ErrorCode, string) {
	if code, msg := t.checkCluster(vc, q.ClusterID); code != kraft.ErrNone {
		return code, msg
	}
	key := kraft.ReplicaKey{ID: kraft.NodeID(q.VoterID), DirectoryID: q.VoterDirectoryID}
	if q.VoterID < 0 {
		return kraft.ErrInvalidRequest, "RemoveRaftVoter needs a voter id"
	}
	ctx, cancel := context.WithTimeout(context.Background(), VoterChangeWait)
	defer cancel()
	return answerOf(vc.nd.RemoveVoter(ctx, key))
}

func (t *Transport) updateVoter(vc *voterChanges, q *kmsg.UpdateRaftVoterRequest) kraft.ErrorCode {
	if code, _ := t.checkCluster(vc, q.ClusterID); code != kraft.ErrNone {
		return code
	}
	st, err := vc.nd.Status()
	if err != nil {
		return kraft.ErrRequestTimedOut
	}
	switch e := kraft.Epoch(q.CurrentLeaderEpoch); {
	case e < st.Epoch:
		return kraft.ErrFencedLeaderEpoch
	case e > st.Epoch:
		return kraft.ErrUnknownLeaderEpoch
	}
	var names, hosts []string
	var ports []uint16
	var ls []replica.Listener
	for _, l := range q.Listeners {
		names, hosts, ports = append(names, l.Name), append(hosts, l.Host), append(ports, l.Port)
		ls = append(ls, replica.Listener{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	ep, ok := t.listenerEndpoint(names, hosts, ports)
	r := q.KRaftVersionFeature
	if !ok || q.VoterID < 0 || r.MinSupportedVersion > kraft.KRaftVersionReconfig || r.MaxSupportedVersion < kraft.KRaftVersionReconfig {
		return kraft.ErrInvalidRequest
	}
	ctx, cancel := context.WithTimeout(context.Background(), VoterChangeWait)
	defer cancel()
	code, _ := answerOf(vc.nd.UpdateVoterListeners(ctx, kraft.ReplicaKey{ID: kraft.NodeID(q.VoterID), DirectoryID: q.VoterDirectoryID}, ep, t.Format().kraftListeners(ls)))
	return code
}

// currentLeader is UpdateRaftVoter's CurrentLeader: the leader this
// replica knows, in its epoch, and its endpoint under the listener name.
func (t *Transport) currentLeader(nd *node.Node) kmsg.UpdateRaftVoterResponseCurrentLeader {
	cl := kmsg.NewUpdateRaftVoterResponseCurrentLeader()
	st, err := nd.Status()
	if err != nil {
		return cl
	}
	cl.LeaderID, cl.LeaderEpoch = int32(st.Leader), int32(st.Epoch)
	for _, ep := range t.endpointOf(st.Leader) {
		cl.Host, cl.Port = ep.Host, int32(ep.Port)
	}
	return cl
}

// answerOf maps a node's answer to a voter change to Kafka's error code
// and message.
func answerOf(err error) (kraft.ErrorCode, string) {
	var nl *node.NotLeaderError
	var vc *node.VoterChangeError
	switch {
	case err == nil:
		return kraft.ErrNone, kraft.ErrNone.String()
	case errors.As(err, &nl):
		return kraft.ErrNotLeaderOrFollower, ""
	case errors.As(err, &vc):
		return vc.Code, vc.Error()
	default: // the wait ran out, or the node stopped
		return kraft.ErrRequestTimedOut, err.Error()
	}
}
