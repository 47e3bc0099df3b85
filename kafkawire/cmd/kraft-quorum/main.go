// Command kraft-quorum describes a KRaft quorum over Kafka's wire
// protocol, as Kafka's kafka-metadata-quorum describe does: it sends
// DescribeQuorum (after ApiVersions) to the controllers it is given until
// the leader answers, and prints the leader, its epoch, the high watermark
// and each voter's and observer's lag. It works with Apache Kafka's
// controllers and with kraft replicas that speak Kafka's protocol
// (kafkawire.Transport with ServeDescribeQuorum).
//
//	kraft-quorum -bootstrap-controller 127.0.0.1:9093,127.0.0.1:9094 describe -status
//	kraft-quorum -bootstrap-controller 127.0.0.1:9093 describe -replication
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/kafkawire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, time.Now)) }

const usage = `usage: kraft-quorum -bootstrap-controller HOST:PORT[,HOST:PORT...] [-timeout D] describe (-status | -replication)
`

func run(args []string, stdout, stderr io.Writer, now func() time.Time) int {
	fs := flag.NewFlagSet("kraft-quorum", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	bootstrap := fs.String("bootstrap-controller", "", "the controllers to ask, comma-separated host:port (kafka-metadata-quorum's --bootstrap-controller)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for an answer from each controller")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 || rest[0] != "describe" || *bootstrap == "" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	dfs := flag.NewFlagSet("describe", flag.ContinueOnError)
	dfs.SetOutput(stderr)
	status := dfs.Bool("status", false, "the leader, epoch, high watermark, lags and voters (--status)")
	replication := dfs.Bool("replication", false, "a line per voter and observer (--replication)")
	if err := dfs.Parse(rest[1:]); err != nil {
		return 2
	}
	if *status == *replication {
		fmt.Fprintln(stderr, "kraft-quorum: describe takes one of -status and -replication")
		return 2
	}
	r, err := describeLeader(strings.Split(*bootstrap, ","), *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "kraft-quorum: %v\n", err)
		return 1
	}
	if *status {
		printStatus(stdout, r, now())
	} else {
		printReplication(stdout, r, now())
	}
	return 0
}

// describeLeader asks each address in turn until one answers as the
// leader.
func describeLeader(addrs []string, timeout time.Duration) (*kmsg.DescribeQuorumResponse, error) {
	var errs []error
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		r, err := kafkawire.Describe(ctx, strings.TrimSpace(a))
		cancel()
		if err == nil {
			err = answerError(r)
		}
		if err == nil {
			return r, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
	}
	return nil, errors.Join(errs...)
}

func answerError(r *kmsg.DescribeQuorumResponse) error {
	if r.ErrorCode != 0 {
		return fmt.Errorf("error %v", kraft.ErrorCode(r.ErrorCode))
	}
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return errors.New("no __cluster_metadata-0 in the answer")
	}
	if p := r.Topics[0].Partitions[0]; p.ErrorCode != 0 {
		return fmt.Errorf("error %v", kraft.ErrorCode(p.ErrorCode))
	}
	return nil
}

// lag is a replica's lag behind the leader's log end (kafka-metadata-quorum:
// the leader's log end offset minus the replica's).
func lagOf(leaderEnd int64, rs kmsg.DescribeQuorumResponseTopicPartitionReplicaState) int64 {
	return leaderEnd - rs.LogEndOffset
}

func leaderEnd(p kmsg.DescribeQuorumResponseTopicPartition) int64 {
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			return v.LogEndOffset
		}
	}
	return p.HighWatermark
}

type jsonReplica struct {
	ID          int32    `json:"id"`
	DirectoryID string   `json:"directoryId"`
	Endpoints   []string `json:"endpoints,omitempty"`
}

func replicasJSON(r *kmsg.DescribeQuorumResponse, rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) string {
	out := []jsonReplica{}
	for _, v := range rs {
		j := jsonReplica{ID: v.ReplicaID, DirectoryID: kafkawire.UuidString(uuid.UUID(v.ReplicaDirectoryID))}
		for _, n := range r.Nodes {
			if n.NodeID == v.ReplicaID {
				for _, l := range n.Listeners {
					j.Endpoints = append(j.Endpoints, fmt.Sprintf("%s://%s:%d", l.Name, l.Host, l.Port))
				}
			}
		}
		out = append(out, j)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// printStatus prints what kafka-metadata-quorum describe --status prints
// (MetadataQuorumCommand.handleDescribeStatus), without the cluster id,
// which DescribeQuorum does not carry.
func printStatus(w io.Writer, r *kmsg.DescribeQuorumResponse, now time.Time) {
	p := r.Topics[0].Partitions[0]
	end := leaderEnd(p)
	var maxLag, maxLagMs int64
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			continue
		}
		if l := lagOf(end, v); l > maxLag {
			maxLag = l
		}
		if v.LastCaughtUpTimestamp >= 0 {
			if ms := now.UnixMilli() - v.LastCaughtUpTimestamp; ms > maxLagMs {
				maxLagMs = ms
			}
		}
	}
	fmt.Fprintf(w, "LeaderId:               %d\n", p.LeaderID)
	fmt.Fprintf(w, "LeaderEpoch:            %d\n", p.LeaderEpoch)
	fmt.Fprintf(w, "HighWatermark:          %d\n", p.HighWatermark)
	fmt.Fprintf(w, "MaxFollowerLag:         %d\n", maxLag)
	fmt.Fprintf(w, "MaxFollowerLagTimeMs:   %d\n", maxLagMs)
	fmt.Fprintf(w, "CurrentVoters:          %s\n", replicasJSON(r, p.CurrentVoters))
	fmt.Fprintf(w, "CurrentObservers:       %s\n", replicasJSON(r, p.Observers))
}

// printReplication prints what kafka-metadata-quorum describe
// --replication prints: a line per voter and observer, the leader first.
func printReplication(w io.Writer, r *kmsg.DescribeQuorumResponse, now time.Time) {
	p := r.Topics[0].Partitions[0]
	end := leaderEnd(p)
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintln(tw, "NodeId\tDirectoryId\tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus\t")
	line := func(v kmsg.DescribeQuorumResponseTopicPartitionReplicaState, status string) {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%s\t\n", v.ReplicaID, kafkawire.UuidString(uuid.UUID(v.ReplicaDirectoryID)),
			v.LogEndOffset, lagOf(end, v), v.LastFetchTimestamp, v.LastCaughtUpTimestamp, status)
	}
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			line(v, "Leader")
		}
	}
	for _, v := range p.CurrentVoters {
		if v.ReplicaID != p.LeaderID {
			line(v, "Follower")
		}
	}
	for _, v := range p.Observers {
		line(v, "Observer")
	}
	_ = tw.Flush()
}
