package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/datadir"
	"github.com/kraftquorum/kraft/node"
	kreplica "github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// kraftd format: a replica's data directory is formatted once, before its
// first start, as Kafka's kafka-storage format does; a start never formats
// (docs/design.md D108). format -update-voters is the deliberate way to
// change a static quorum's voter set (D109).

const formatUsage = `Usage: kraftd format -cluster-id UUID -id N -dir PATH -voters LIST [-directory-id UUID]
       kraftd format -cluster-id UUID -id N -dir PATH -initial-voters LIST
       kraftd format -cluster-id UUID -id N -dir PATH -standalone -listen ADDR [-directory-id UUID]
       kraftd format -cluster-id UUID -id N -dir PATH -no-initial-controllers [-directory-id UUID]
       kraftd format -update-voters -cluster-id UUID -id N -dir PATH -voters LIST

Formats a new replica's data directory, once, before its first start (Kafka's
kafka-storage format): DIR/meta.properties gets the cluster id, the node id,
the directory id and, for a static quorum, the voter set; a dynamic quorum's
first voters (-initial-voters, -standalone) are written as the bootstrap
checkpoint. Format refuses a directory that is formatted already or holds
anything: never format a replica that ran before with -initial-voters or
-standalone (it would start a second history); format a replica that lost its
disk as a new one, -no-initial-controllers, and add it to the voters again.

-update-voters changes the voter set a static replica was formatted with:
stop every replica, run it on each with the new -voters, start them again.

Exit status: 0 when done, 1 when refused, 2 on bad flags.

Flags:
`

// formatFlags are format's flags as given.
type formatFlags struct {
	clusterID, id, dir, voters, initialVoters, listen, dirID string
	standalone, noInitial, updateVoters                      bool
}

func newFormatFlagSet(r *formatFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("kraftd format", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&r.clusterID, "cluster-id", "", "the cluster `UUID` (required; kraftd -random-uuid makes one)")
	fs.StringVar(&r.id, "id", "", "the replica's node id `N` (required)")
	fs.StringVar(&r.dir, "dir", "", "the data directory `PATH` (required)")
	fs.StringVar(&r.voters, "voters", "", "a static quorum: its voter `LIST`, id@host:port or id:DIRECTORY-ID@host:port each, the same on every replica")
	fs.StringVar(&r.initialVoters, "initial-voters", "", "a dynamic quorum's first voters, a `LIST` of id:DIRECTORY-ID@host:port or Kafka's id@host:port:DIRECTORY-ID including this replica, the same on each of them (kafka-storage format --initial-controllers)")
	fs.BoolVar(&r.standalone, "standalone", false, "a dynamic quorum whose first voter is this replica alone, reached at -listen (kafka-storage format --standalone)")
	fs.StringVar(&r.listen, "listen", "", "with -standalone, the `ADDR` the other replicas reach this one at")
	fs.BoolVar(&r.noInitial, "no-initial-controllers", false, "a dynamic quorum's replica that joins later, as an observer, to be added at the leader (kafka-storage format --no-initial-controllers)")
	fs.StringVar(&r.dirID, "directory-id", "", "the replica's directory `UUID` (default: its entry's, or a new random one)")
	fs.BoolVar(&r.updateVoters, "update-voters", false, "change the voter set of a formatted static replica to -voters (every replica stopped)")
	return fs
}

func formatHelp() string {
	var b strings.Builder
	fs := newFormatFlagSet(&formatFlags{})
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return formatUsage + b.String()
}

// runFormat is `kraftd format`.
func runFormat(args []string, stdout, stderr io.Writer) int {
	var r formatFlags
	fs := newFormatFlagSet(&r)
	bad := func(format string, a ...interface{}) int {
		_, _ = fmt.Fprintf(stderr, "kraftd format: %s (kraftd format -h for help)\n", fmt.Sprintf(format, a...))
		return exitBad
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = fmt.Fprint(stdout, formatHelp())
			return exitOK
		}
		return bad("%v", err)
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if err := checkFormatFlags(&r); err != nil {
		return bad("%v", err)
	}
	var id datadir.Identity
	var err error
	if id.ClusterID, err = parseUUID(r.clusterID); err != nil {
		return bad("-cluster-id %q: %v", r.clusterID, err)
	}
	if id.NodeID, err = parseNodeID(r.id); err != nil {
		return bad("-id %q: %v", r.id, err)
	}
	var given [16]byte
	if r.dirID != "" {
		if given, err = parseUUID(r.dirID); err != nil {
			return bad("-directory-id %q: %v", r.dirID, err)
		}
	}
	var bootstrap []node.Voter
	switch {
	case r.voters != "":
		if given, err = staticVoters(&id, given, r.voters); err != nil {
			return bad("%v", err)
		}
		id.DirectoryID = given
		if r.updateVoters {
			return updateVoters(r.dir, id, stdout, stderr)
		}
	case r.initialVoters != "":
		if bootstrap, err = initialVoters(&id, given, r.initialVoters); err != nil {
			return bad("%v", err)
		}
		id.Dynamic = true
	default:
		if r.standalone {
			if err := checkAddr(r.listen, false); err != nil {
				return bad("-listen %q: %v", r.listen, err)
			}
		}
		id.Dynamic, id.DirectoryID = true, given
		if id.DirectoryID == ([16]byte{}) {
			id.DirectoryID = uuid.New()
		}
		if r.standalone {
			bootstrap = []node.Voter{{Key: id.Key(), Endpoint: r.listen, KRaftVersions: kreplica.SupportedKRaftVersions}}
		}
	}
	return writeFormat(r.dir, id, bootstrap, stdout, stderr)
}

// writeFormat formats dir as the replica id, with the bootstrap voters
// of a dynamic quorum (nil if none), and says what it did.
func writeFormat(dir string, id datadir.Identity, bootstrap []node.Voter, stdout, stderr io.Writer) int {
	var payload []byte
	if bootstrap != nil {
		payload = kreplica.EncodeVoters(bootstrap)
	}
	lock, code := lockForFormat(dir, stderr)
	if lock == nil {
		return code
	}
	defer func() { _ = lock.Unlock() }()
	if err := datadir.Format(storage.OS(), dir, id, payload); err != nil {
		_, _ = fmt.Fprintf(stderr, "kraftd format: %v\n", err)
		if errors.Is(err, datadir.ErrFormatted) || errors.Is(err, datadir.ErrNotEmpty) {
			_, _ = fmt.Fprintln(stderr, "kraftd format: a formatted replica is started, not formatted again; "+
				"a replica that lost its data is formatted as a new one in an empty directory (-no-initial-controllers) and added to the voters again")
		}
		return exitFail
	}
	_, _ = fmt.Fprintf(stdout, "Formatted %s: cluster %s, node %d, %s\n", dir, kafkaUUID(id.ClusterID), id.NodeID, describeIdentity(id, bootstrap))
	return exitOK
}

// checkFormatFlags checks the flags every format needs, and that exactly
// one way of formatting (-voters, -initial-voters, -standalone,
// -no-initial-controllers or -update-voters) is given.
func checkFormatFlags(r *formatFlags) error {
	modes := 0
	for _, set := range []bool{r.voters != "" && !r.updateVoters, r.initialVoters != "", r.standalone, r.noInitial, r.updateVoters} {
		if set {
			modes++
		}
	}
	switch {
	case r.clusterID == "":
		return errors.New("-cluster-id is required (kraftd -random-uuid makes one; the same for every replica of the cluster)")
	case r.id == "":
		return errors.New("-id is required")
	case r.dir == "":
		return errors.New("-dir is required")
	case modes != 1:
		return errors.New("want one of -voters (a static quorum), -initial-voters, -standalone or -no-initial-controllers (a dynamic one), or -update-voters with -voters")
	case r.updateVoters && r.voters == "":
		return errors.New("-update-voters needs the new -voters")
	case r.standalone != (r.listen != ""):
		return errors.New("-standalone needs -listen, the address the other replicas reach this one at (and -listen is only for -standalone)")
	}
	return nil
}

// staticVoters sets id's voters to the static set voters (-voters) and
// returns the local replica's directory id: given (-directory-id) or the
// one of its entry, which must agree.
func staticVoters(id *datadir.Identity, given [16]byte, voters string) ([16]byte, error) {
	vs, err := parseVoters(voters)
	if err != nil {
		return given, fmt.Errorf("-voters: %v", err)
	}
	for _, v := range vs {
		id.Voters = append(id.Voters, v.key)
		if v.key.ID == id.NodeID && v.key.DirectoryID != ([16]byte{}) {
			if given != ([16]byte{}) && given != v.key.DirectoryID {
				return given, fmt.Errorf("-directory-id %s is not the one of its -voters entry, %s", uuid.UUID(given), uuid.UUID(v.key.DirectoryID))
			}
			given = v.key.DirectoryID
		}
	}
	return given, nil
}

// initialVoters returns the first voters of a dynamic quorum
// (-initial-voters), every one with its directory id, and sets id's
// directory id to the local replica's entry, which must be there and
// agree with given (-directory-id).
func initialVoters(id *datadir.Identity, given [16]byte, initial string) ([]node.Voter, error) {
	vs, err := parseVoters(initial)
	if err != nil {
		return nil, fmt.Errorf("-initial-voters: %v", err)
	}
	var bootstrap []node.Voter
	found := false
	for _, v := range vs {
		if v.key.DirectoryID == ([16]byte{}) {
			return nil, fmt.Errorf("-initial-voters: voter %d has no directory id (want id:DIRECTORY-ID@host:port)", v.key.ID)
		}
		if v.key.ID == id.NodeID {
			found = true
			if given != ([16]byte{}) && given != v.key.DirectoryID {
				return nil, fmt.Errorf("-directory-id %s is not the one of its -initial-voters entry, %s", uuid.UUID(given), uuid.UUID(v.key.DirectoryID))
			}
			id.DirectoryID = v.key.DirectoryID
		}
		bootstrap = append(bootstrap, node.Voter{Key: v.key, Endpoint: v.addr, KRaftVersions: kreplica.SupportedKRaftVersions})
	}
	if !found {
		return nil, fmt.Errorf("-initial-voters has no entry for -id %d: a replica that is not a first voter is formatted with -no-initial-controllers", id.NodeID)
	}
	return bootstrap, nil
}

// describeIdentity says what a replica was formatted as.
func describeIdentity(id datadir.Identity, bootstrap []node.Voter) string {
	dirID := "no directory id"
	if id.DirectoryID != ([16]byte{}) {
		dirID = "directory id " + uuid.UUID(id.DirectoryID).String()
	}
	switch {
	case !id.Dynamic:
		return fmt.Sprintf("%s, static voters %s", dirID, datadir.FormatVoters(id.Voters))
	case bootstrap != nil:
		var keys []kraft.ReplicaKey
		for _, v := range bootstrap {
			keys = append(keys, v.Key)
		}
		return fmt.Sprintf("%s, a dynamic quorum bootstrapped with the voters %v", dirID, keys)
	default:
		return fmt.Sprintf("%s, a dynamic quorum's replica that joins later (an observer until the leader adds it)", dirID)
	}
}

// lockForFormat locks dir (creating it) so that no kraftd runs on it
// meanwhile.
func lockForFormat(dir string, stderr io.Writer) (*storage.DirLock, int) {
	if err := storage.OS().MkdirAll(dir); err != nil {
		_, _ = fmt.Fprintf(stderr, "kraftd format: creating %s: %v\n", dir, err)
		return nil, exitFail
	}
	lock, err := storage.LockDir(dir)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "kraftd format: %v\n", err)
		return nil, exitFail
	}
	return lock, exitOK
}

func updateVoters(dir string, id datadir.Identity, stdout, stderr io.Writer) int {
	lock, code := lockForFormat(dir, stderr)
	if lock == nil {
		return code
	}
	defer func() { _ = lock.Unlock() }()
	old, err := datadir.UpdateVoters(storage.OS(), dir, id.ClusterID, id.NodeID, id.Voters)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "kraftd format: %v\n", err)
		return exitFail
	}
	_, _ = fmt.Fprintf(stdout, "Updated %s: static voters %s (were %s); update every replica the same way before starting any of them\n",
		dir, datadir.FormatVoters(id.Voters), datadir.FormatVoters(old))
	return exitOK
}
