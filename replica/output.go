package replica

import "github.com/kraftquorum/kraft"

// Output is what a host carries out for its replica, in order: the
// types below, ClusterIDRefused (refusal.go), ReadReady and ReadFailed (read.go). The host never looks inside a Send's message: it hands it
// to its transport.
type Output interface{ isOutput() }

// Send asks the host to send Message to Message.To. A message that cannot
// be sent is dropped: the replica's timeouts and retries make up for it.
// The message's byte slices may be the log's memory (storage.SharedReader):
// encode or copy them before the next input, never modify them.
type Send struct{ Message Message }

// Sync asks the host to make the log durable (storage.Log.Sync) and call
// Synced when it is done; one is outstanding at a time. The host may run
// it off the loop while other inputs go on (group commit); an error stops
// the host.
type Sync struct{}

// Commit reports a new high watermark: the records below it are
// committed. It never decreases while the replica runs.
type Commit struct{ HighWatermark int64 }

// Installed reports a snapshot downloaded from the leader and installed:
// the log now starts at its end, and every other snapshot is deleted. The
// application's state must be replaced by the snapshot before it takes
// any record at or after Snapshot.Offset.
type Installed struct{ Snapshot kraft.LogEnd }

// RoleChange reports a role change (Kafka's resetConnections happened
// inside the replica: responses to earlier requests are dropped). A host
// fails the client calls that waited on the old role.
type RoleChange struct{ kraft.RoleChanged }

// VoterChangeAnswer is the leader's answer to an AddVoter, RemoveVoter or
// UpdateVoter request of the host's client (by its Ref).
type VoterChangeAnswer struct{ Response kraft.SendVoterChangeResponse }

// Peer gives the host the endpoint of a replica, from the voter set or a
// voter change: a host that dials its peers points its transport at it.
type Peer struct {
	ID       kraft.NodeID
	Endpoint string
}

// LeaderRefused reports that the replica refuses to follow the leader of
// its epoch, which asked it to remove committed records (kraft.LeaderRefused,
// docs/design.md D113): it keeps its log, fetches no more from that
// leader, and campaigns when its fetch timer runs out. The replica goes on;
// a host reports it (at ERROR, with the leader's id and epoch) and counts
// the replica not ready while State().RefusedLeader() holds, until it is
// in another epoch.
type LeaderRefused struct{ kraft.LeaderRefused }

// Stopped reports the error that stopped the replica (a Fault, a storage
// error): it takes no further input.
type Stopped struct{ Err error }

func (Send) isOutput()              {}
func (Sync) isOutput()              {}
func (Commit) isOutput()            {}
func (Installed) isOutput()         {}
func (RoleChange) isOutput()        {}
func (VoterChangeAnswer) isOutput() {}
func (Peer) isOutput()              {}
func (LeaderRefused) isOutput()     {}
func (Stopped) isOutput()           {}
