package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// Dynamic voter sets (KIP-853) in the runtime: the bootstrap checkpoint,
// the transport's address book, and the AddVoter, RemoveVoter and
// UpdateVoter calls. The voter sets of the log and of snapshots are the
// replica layer's (package replica).

// Voter is one voter of a dynamic voter set: its key, its endpoint and
// the kraft.version levels it supports (replica.Voter).
type Voter = replica.Voter

// supportedKRaftVersions is the kraft.version range this runtime supports.
var supportedKRaftVersions = replica.SupportedKRaftVersions

func encodeVoters(vs []Voter) []byte                    { return replica.EncodeVoters(vs) }
func decodeVoters(b []byte) ([]Voter, error)            { return replica.DecodeVoters(b) }
func keysOf(vs []Voter) []kraft.ReplicaKey              { return replica.KeysOf(vs) }
func writeSnapshotVoters(w io.Writer, vs []Voter) error { return replica.WriteSnapshotVoters(w, vs) }
func readSnapshotVoters(r io.Reader) ([]Voter, io.Reader, error) {
	return replica.ReadSnapshotVoters(r)
}

// bootstrapVoters is the bootstrap checkpoint's voter set: read from
// Config.BootstrapPath, or written there from Config.InitialVoters the
// first time (only into a log that holds nothing yet), or
// Config.InitialVoters as they are without a path. nil: none.
func bootstrapVoters(cfg Config) ([]Voter, error) {
	if cfg.BootstrapPath == "" {
		return cfg.InitialVoters, nil
	}
	b, err := storage.ReadBootstrap(cfg.BootstrapPath)
	if err != nil {
		return nil, err
	}
	if b != nil {
		vs, err := decodeVoters(b)
		if err != nil {
			return nil, fmt.Errorf("node: bootstrap checkpoint %s: %w", cfg.BootstrapPath, err)
		}
		if cfg.InitialVoters != nil && !sameVoterKeys(vs, cfg.InitialVoters) {
			return nil, fmt.Errorf("node: Config.InitialVoters %v differ from the bootstrap checkpoint's %v (%s)",
				keysOf(cfg.InitialVoters), keysOf(vs), cfg.BootstrapPath)
		}
		return vs, nil
	}
	if cfg.InitialVoters == nil {
		return nil, nil
	}
	if cfg.Log.End().Offset > 0 || cfg.Log.StartOffset() > 0 {
		// Kafka's format refuses a directory that holds data.
		return nil, fmt.Errorf("node: Config.InitialVoters for a log that already holds records (ends at %d)", cfg.Log.End().Offset)
	}
	if err := storage.WriteBootstrap(cfg.BootstrapPath, encodeVoters(cfg.InitialVoters)); err != nil {
		return nil, err
	}
	return cfg.InitialVoters, nil
}

func sameVoterKeys(a, b []Voter) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key {
			return false
		}
	}
	return true
}

// VoterChangeError is a voter change the leader refused or could not
// finish: the Kafka error code of its answer (DUPLICATE_VOTER,
// VOTER_NOT_FOUND, REQUEST_TIMED_OUT, INVALID_REQUEST, ...).
type VoterChangeError struct {
	Kind kraft.VoterChangeKind
	Code kraft.ErrorCode
}

func (e *VoterChangeError) Error() string {
	return fmt.Sprintf("node: %v: %v", e.Kind, e.Code)
}

// voterCall is a pending AddVoter, RemoveVoter or UpdateVoter of the
// client API, by its Ref.
type voterCall struct {
	ch chan error
}

// AddVoter asks the leader (this replica) to add key, reached at endpoint,
// to the voter set (Kafka's AddRaftVoter) and returns once the change is
// committed: nil, or a *VoterChangeError with Kafka's error code, a
// *NotLeaderError on a replica that does not lead, or ctx's error (the
// change may still happen). The new voter must be running and fetching
// from the leader as an observer: the leader asks it for its kraft.version
// range (ApiVersions) and waits for it to catch up.
func (n *Node) AddVoter(ctx context.Context, key kraft.ReplicaKey, endpoint string) error {
	return n.voterCall(ctx, func() (uint64, error) { return n.r.AddVoter(n.clock(), key, endpoint) })
}

// AddVoterListeners is AddVoter of a voter whose request named listeners
// (Kafka's AddRaftVoterRequest's, endpoint's among them): the VotersRecord
// names them all (docs/design.md D260).
func (n *Node) AddVoterListeners(ctx context.Context, key kraft.ReplicaKey, endpoint string, listeners []replica.Listener) error {
	return n.voterCall(ctx, func() (uint64, error) { return n.r.AddVoterListeners(n.clock(), key, endpoint, listeners) })
}

// RemoveVoter asks the leader (this replica) to remove the voter key
// (Kafka's RemoveRaftVoter), directory id included, and returns once the
// change is committed; errors as AddVoter's. A leader that removes itself
// resigns once the change commits.
func (n *Node) RemoveVoter(ctx context.Context, key kraft.ReplicaKey) error {
	return n.voterCall(ctx, func() (uint64, error) { return n.r.RemoveVoter(n.clock(), key) })
}

// UpdateVoter asks the leader (this replica) to record a new endpoint for
// the voter key (Kafka's UpdateRaftVoter). The leader answers once the
// VotersRecord is written, without waiting for its commit (as Kafka does).
func (n *Node) UpdateVoter(ctx context.Context, key kraft.ReplicaKey, endpoint string) error {
	return n.voterCall(ctx, func() (uint64, error) { return n.r.UpdateVoter(n.clock(), key, endpoint) })
}

// UpdateVoterListeners is UpdateVoter with the listeners a Kafka
// UpdateRaftVoterRequest named, as AddVoterListeners.
func (n *Node) UpdateVoterListeners(ctx context.Context, key kraft.ReplicaKey, endpoint string, listeners []replica.Listener) error {
	return n.voterCall(ctx, func() (uint64, error) { return n.r.UpdateVoterListeners(n.clock(), key, endpoint, listeners) })
}

// voterCall makes the replica step a client's voter change on the loop
// and waits for its answer (by Ref).
func (n *Node) voterCall(ctx context.Context, call func() (uint64, error)) error {
	ch := make(chan error, 1)
	var refused error
	err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			refused = &NotLeaderError{Leader: leaderOrNone(n.st), Epoch: n.st.Epoch()}
			return
		}
		ref, err := call()
		if err != nil {
			refused = transferRefusal(n.st, err)
			return
		}
		n.voterCalls[ref] = &voterCall{ch: ch}
		n.carry()
	})
	if err != nil {
		return err
	}
	if refused != nil {
		return refused
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return n.stoppedErr()
	}
}

// voterChangeResponse answers a request: a client call by its Ref; a
// replica's request (auto-join) gets no answer, which its state does not
// need (kraft.Deliver).
func (n *Node) voterChangeResponse(a kraft.SendVoterChangeResponse) {
	c := n.voterCalls[a.Ref]
	if c == nil {
		return
	}
	delete(n.voterCalls, a.Ref)
	level, outcome := slog.LevelInfo, "done"
	if a.Error != kraft.ErrNone {
		level, outcome = slog.LevelWarn, "refused: "+a.Error.String()
	}
	n.logEvent(level, EventVoterChangeAnswered, "", fmt.Sprintf("%v %s", a.Kind, outcome),
		"kind", a.Kind.String(), "error", a.Error.String())
	if a.Error == kraft.ErrNone {
		c.ch <- nil
		return
	}
	if a.Error == kraft.ErrNotLeaderOrFollower {
		// A leader that resigns while the change is pending answers it so,
		// still naming itself in its epoch: no other leader is known yet.
		leader := a.LeaderID
		if leader == n.local.ID {
			leader = kraft.NoNode
		}
		c.ch <- &NotLeaderError{Leader: leader, Epoch: a.Epoch}
		return
	}
	c.ch <- &VoterChangeError{Kind: a.Kind, Code: a.Error}
}

// peerBook is a Transport that keeps addresses (TCPTransport): the runtime
// points it at the endpoints the replica gives (replica.Peer).
type peerBook interface {
	SetPeer(id kraft.NodeID, addr string)
}

// VoterInfo is one voter of the set in force, in a Status.
type VoterInfo struct {
	ID          kraft.NodeID `json:"id"`
	DirectoryID uuid.UUID    `json:"directory_id"`
	Endpoint    string       `json:"endpoint,omitempty"`
}

// Voters returns the voter set in force (committed or not) with the
// endpoints the log holds, and the kraft.version: 1 for a dynamic voter
// set, 0 for a static one (whose voters have no endpoint here).
func (n *Node) Voters() ([]VoterInfo, int16, error) {
	var out []VoterInfo
	var version int16
	err := n.call(func() {
		out, version = n.voterInfos(), n.st.KRaftVersion()
	})
	return out, version, err
}

func (n *Node) voterInfos() []VoterInfo {
	cur := n.r.CurrentVoters()
	var out []VoterInfo
	for _, k := range n.st.Voters() {
		vi := VoterInfo{ID: k.ID, DirectoryID: k.DirectoryID}
		for _, v := range cur {
			if v.Key == k {
				vi.Endpoint = v.Endpoint
			}
		}
		out = append(out, vi)
	}
	return out
}
