package sim

import (
	"fmt"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/plant"
)

// Network describes how the simulated network treats each message.
type Network struct {
	// MinDelay and MaxDelay bound the delivery delay, drawn uniformly for
	// each message (independent delays reorder messages).
	MinDelay time.Duration `json:"min_delay"`
	MaxDelay time.Duration `json:"max_delay"`
	// Loss is the probability that a message is lost.
	Loss float64 `json:"loss"`
	// Duplicate is the probability that a message is delivered twice (the
	// copy gets its own delay).
	Duplicate float64 `json:"duplicate"`
}

// Options configure a Cluster. Zero fields take the defaults in
// DefaultOptions.
type Options struct {
	// Voters (1 or more) get node ids 0..Voters-1; Observers get the ids
	// after them.
	Voters    int `json:"voters"`
	Observers int `json:"observers"`
	// Seed drives every random choice of the run: network delays, losses,
	// duplicates, the voter a NoNode fetch goes to, the client workload and
	// each replica's kraft.Config.Seed.
	Seed int64 `json:"seed"`

	// Protocol timeouts, passed to kraft.Config (Kafka's defaults).
	ElectionTimeout    time.Duration `json:"election_timeout"`
	FetchTimeout       time.Duration `json:"fetch_timeout"`
	ElectionBackoffMax time.Duration `json:"election_backoff_max"`

	// RequestTimeout: an unanswered Fetch is sent again after it.
	RequestTimeout time.Duration `json:"request_timeout"`
	// FetchMaxWait: how long a leader parks a caught-up Fetch.
	FetchMaxWait time.Duration `json:"fetch_max_wait"`
	// FetchRetryBackoff: the wait before a follower re-sends a Fetch whose
	// response it could not use (its log no longer ended at the fetch
	// offset).
	FetchRetryBackoff time.Duration `json:"fetch_retry_backoff"`
	// MaxFetchRecords caps the records in one Fetch response.
	MaxFetchRecords int `json:"max_fetch_records"`
	// FlushDelayMax: every replica's host writes records at once and
	// reports them (LogAppended), then flushes its log after a delay drawn
	// from [0, FlushDelayMax] and reports that (LogFlushed). Delays longer
	// than the election timeout model a slow disk; OpDisk changes the
	// delay during a run.
	FlushDelayMax time.Duration `json:"flush_delay_max"`
	// ClientInterval is the mean time between client appends; the client
	// appends 1-3 records at the leader each time. Negative: no client.
	ClientInterval time.Duration `json:"client_interval"`

	Network Network `json:"network"`

	// SnapshotEvery: each replica's host writes a snapshot once its high
	// watermark is this many records past its latest snapshot, and cleans
	// its log behind the snapshots it keeps (see snapshot.go). Negative:
	// no snapshots.
	SnapshotEvery int `json:"snapshot_every,omitempty"`
	// SnapshotsKept is how many snapshots each host keeps; the log starts
	// at the oldest (Kafka's deleteBeforeSnapshot). 1 cleans the log up to
	// the latest snapshot.
	SnapshotsKept int `json:"snapshots_kept,omitempty"`
	// SnapshotChunkBytes is the most bytes one FetchSnapshot response
	// carries (the replica layer's SnapshotChunkBytes): a download takes
	// size/SnapshotChunkBytes round trips, so long runs download for
	// seconds (D210).
	SnapshotChunkBytes int `json:"snapshot_chunk_bytes,omitempty"`
	// SnapshotDownloadHold: a host does not delete a snapshot it served a
	// FetchSnapshot chunk of within this time, even past SnapshotsKept
	// (its log start lags until the download is over), so that a lagging
	// follower's download is not cut short by SNAPSHOT_NOT_FOUND at every
	// new snapshot (the README's host contract, rule 10). 0: the fetch
	// timeout, after which a follower would look for another leader
	// anyway; negative: no hold (the host cleans by SnapshotsKept alone).
	SnapshotDownloadHold time.Duration `json:"snapshot_download_hold,omitempty"`

	// DirectoryIDs gives every replica a KIP-853 directory id, also in the
	// voter keys; a disk loss gives the replica a new one, so a voter that
	// lost its disk comes back as an observer.
	DirectoryIDs bool `json:"directory_ids,omitempty"`
	// ClusterID gives every replica the same cluster id, sent in every
	// request and checked by every receiver.
	ClusterID bool `json:"cluster_id,omitempty"`
	// PreVoteUnsupported lists the replicas whose hosts answer a pre-vote
	// request with UNSUPPORTED_VERSION, as a Kafka peer without Vote v2
	// (KIP-996) does; the requester then skips the pre-vote.
	PreVoteUnsupported []kraft.NodeID `json:"pre_vote_unsupported,omitempty"`
	// KafkaFailover sets kraft.Config.KafkaFailover on every replica:
	// failovers exactly as Kafka runs them, without kraft's refinements
	// (docs/design.md D59).
	KafkaFailover bool `json:"kafka_failover,omitempty"`

	// Dynamic keeps the voter set in the log (KIP-853, kraft.version 1):
	// the Voters replicas are controllers that start from a bootstrap
	// checkpoint holding the first BootstrapVoters of them (all if 0); the
	// others are spares, observers until added (OpAddVoter, or AutoJoin).
	// Observers are brokers that start with no voter set. Dynamic implies
	// DirectoryIDs. See voters.go.
	Dynamic         bool `json:"dynamic,omitempty"`
	BootstrapVoters int  `json:"bootstrap_voters,omitempty"`
	// AutoJoin sets kraft.Config.AutoJoin on every controller: one that is
	// not in the voter set asks the leader to remove the voter with its id
	// and another directory id, then to add it.
	AutoJoin bool `json:"auto_join,omitempty"`

	// AimedFaults is how many faults a run aims at a replica right after
	// a log operation that changes what its recovery reads (a truncation,
	// a cleaning, a reset to a snapshot) at most: a damage of its log's
	// last records or a power loss within AimWindow (200 ms if 0), then a
	// restart (aim.go; docs/design.md D130). 0: none.
	AimedFaults int           `json:"aimed_faults,omitempty"`
	AimWindow   time.Duration `json:"aim_window,omitempty"`

	// plant is a bug planted in every replica's layer (package
	// internal/plant), by the tests that show the schedules catch it.
	plant plant.Bug
}

// DefaultOptions returns the defaults: Kafka's timeouts (T_e 1 s, T_f 2 s,
// B_max 1 s), a 1 s request timeout, a 500 ms fetch max wait, messages
// delayed 1-20 ms, no loss, no duplicates, a client append every 100 ms,
// and a snapshot every 32 committed records on every replica, 2 kept,
// served in chunks of 512 bytes (a replica down for a few seconds comes
// back behind its leader's log start and catches up from a snapshot).
func DefaultOptions() Options {
	return Options{
		Voters:             3,
		ElectionTimeout:    time.Second,
		FetchTimeout:       2 * time.Second,
		ElectionBackoffMax: time.Second,
		RequestTimeout:     time.Second,
		FetchMaxWait:       500 * time.Millisecond,
		FetchRetryBackoff:  50 * time.Millisecond,
		MaxFetchRecords:    32,
		FlushDelayMax:      20 * time.Millisecond,
		ClientInterval:     100 * time.Millisecond,
		Network:            Network{MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond},
		SnapshotEvery:      32,
		SnapshotsKept:      2,
		SnapshotChunkBytes: 512,
	}
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Voters == 0 {
		o.Voters = d.Voters
	}
	setDur := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	setDur(&o.ElectionTimeout, d.ElectionTimeout)
	setDur(&o.FetchTimeout, d.FetchTimeout)
	setDur(&o.ElectionBackoffMax, d.ElectionBackoffMax)
	setDur(&o.RequestTimeout, d.RequestTimeout)
	setDur(&o.FetchMaxWait, d.FetchMaxWait)
	setDur(&o.FetchRetryBackoff, d.FetchRetryBackoff)
	setDur(&o.FlushDelayMax, d.FlushDelayMax)
	setDur(&o.ClientInterval, d.ClientInterval)
	if o.MaxFetchRecords == 0 {
		o.MaxFetchRecords = d.MaxFetchRecords
	}
	if o.Network == (Network{}) {
		o.Network = d.Network
	}
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = d.SnapshotEvery
	}
	if o.SnapshotsKept == 0 {
		o.SnapshotsKept = d.SnapshotsKept
	}
	if o.SnapshotChunkBytes == 0 {
		o.SnapshotChunkBytes = d.SnapshotChunkBytes
	}
	if o.Dynamic {
		o.DirectoryIDs = true
		if o.BootstrapVoters == 0 {
			o.BootstrapVoters = o.Voters
		}
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.Voters < 1:
		return fmt.Errorf("sim: %d voters", o.Voters)
	case o.Observers < 0:
		return fmt.Errorf("sim: %d observers", o.Observers)
	case o.Network.MinDelay < 0 || o.Network.MaxDelay < o.Network.MinDelay:
		return fmt.Errorf("sim: bad network delays [%v, %v]", o.Network.MinDelay, o.Network.MaxDelay)
	case o.Network.Loss < 0 || o.Network.Loss > 1 || o.Network.Duplicate < 0 || o.Network.Duplicate > 1:
		return fmt.Errorf("sim: bad network probabilities %+v", o.Network)
	case o.Dynamic && (o.BootstrapVoters < 1 || o.BootstrapVoters > o.Voters):
		return fmt.Errorf("sim: %d bootstrap voters of %d controllers", o.BootstrapVoters, o.Voters)
	case !o.Dynamic && (o.BootstrapVoters != 0 || o.AutoJoin):
		return fmt.Errorf("sim: BootstrapVoters and AutoJoin need Dynamic")
	case o.SnapshotsKept < 1 || o.SnapshotChunkBytes < 1:
		return fmt.Errorf("sim: bad snapshot options (keep %d, chunks of %d bytes)", o.SnapshotsKept, o.SnapshotChunkBytes)
	}
	return nil
}
