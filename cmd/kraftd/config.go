package main

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
)

// voter is one entry of -voters: a voter's key and where it listens.
type voter struct {
	key  kraft.ReplicaKey
	addr string
}

// config is what the flags ask for, checked and with every default filled
// in.
type config struct {
	id       kraft.NodeID
	dirID    [16]byte // the local directory id; zero: none
	voters   []voter
	observer bool // -id (with its directory id) matches no voter

	// dirIDGiven: -directory-id fixes the directory id.
	dirIDGiven bool
	// onDamage is what to do with a damaged data directory at start:
	// onDamageReplace or onDamageRefuse (docs/design.md D91).
	onDamage string

	// A dynamic quorum (KIP-853): -initial-voters (the bootstrap voter
	// set, on the replicas that start the quorum), -bootstrap-servers
	// (where a new replica finds the leader) and -auto-join.
	dynamic          bool
	initialVoters    []voter
	bootstrapServers []voter
	autoJoin         bool
	dir              string
	listen           string // the quorum (TCP) address to listen on
	httpAddr         string // "": no HTTP endpoint
	// peerHTTP are the other replicas' HTTP API addresses (-peer-http),
	// where a follower asks the leader for a read point (D152).
	peerHTTP map[kraft.NodeID]string

	clusterID    [16]byte
	hasClusterID bool
	seed         uint64

	electionTimeout    time.Duration
	fetchTimeout       time.Duration
	electionBackoffMax time.Duration
	requestTimeout     time.Duration
	retryBackoff       time.Duration
	fetchMaxWait       time.Duration

	snapshotEvery int64 // 0: the replica takes no snapshots
	readyMaxLag   int64 // GET /readyz: the most a follower may lag

	// The log (logging.go): -log-format, -log-level, and the thresholds
	// of the runtime's lag and slow-sync records.
	logFormat         string
	logLevel          slog.Level
	logger            *slog.Logger // made by run
	lagThreshold      int64
	slowSyncThreshold time.Duration
	slowSyncResign    int
	wire              string // the quorum's wire protocol: wireKraft or wireKafka
	listenerName      string // with -wire kafka: the listener name of the endpoints

	// warnings are the keys of -config that kraftd does not use.
	warnings []string
}

// Kafka's defaults (controller.quorum.*).
const (
	defaultElectionTimeout    = time.Second
	defaultFetchTimeout       = 2 * time.Second
	defaultElectionBackoffMax = time.Second
)

// kraftConfig is the replica's kraft.Config.
func (c config) kraftConfig() kraft.Config {
	kc := kraft.Config{
		Local:              kraft.ReplicaKey{ID: c.id, DirectoryID: c.dirID},
		Observer:           c.observer,
		ElectionTimeout:    c.electionTimeout,
		FetchTimeout:       c.fetchTimeout,
		ElectionBackoffMax: c.electionBackoffMax,
		Seed:               c.seed,
		AutoJoin:           c.autoJoin,
		// controller.quorum.request.timeout.ms also bounds a pending
		// AddRaftVoter or RemoveRaftVoter, as in Kafka.
		RequestTimeout: c.requestTimeout,
	}
	if c.hasClusterID {
		kc.ClusterID.UUID = c.clusterID
		kc.ClusterID.Valid = true
	}
	for _, v := range c.voters {
		kc.Voters = append(kc.Voters, v.key)
	}
	return kc
}

// peers are the addresses of every voter but this replica: where its
// requests go. An observer sends to every voter. In a dynamic quorum, the
// initial voters and the bootstrap servers; the runtime adds the endpoints
// of the voter set as the log changes it.
func (c config) peers() map[kraft.NodeID]string {
	p := make(map[kraft.NodeID]string, len(c.voters))
	for _, list := range [][]voter{c.voters, c.initialVoters, c.bootstrapServers} {
		for _, v := range list {
			if v.key.ID != c.id {
				p[v.key.ID] = v.addr
			}
		}
	}
	return p
}

// nodeInitialVoters is -initial-voters for node.Config.InitialVoters.
func (c config) nodeInitialVoters() []node.Voter {
	var out []node.Voter
	for _, v := range c.initialVoters {
		out = append(out, node.Voter{Key: v.key, Endpoint: v.addr, KRaftVersions: kraft.VersionRange{Min: 0, Max: kraft.KRaftVersionReconfig}})
	}
	return out
}

// bootstrapIDs are the ids of -bootstrap-servers, or else of
// -initial-voters.
func (c config) bootstrapIDs() []kraft.NodeID {
	list := c.bootstrapServers
	if list == nil {
		list = c.initialVoters
	}
	var ids []kraft.NodeID
	for _, v := range list {
		if v.key.ID != c.id {
			ids = append(ids, v.key.ID)
		}
	}
	return ids
}

// rawFlags are the flags as given, before they are checked.
type rawFlags struct {
	id, voters, dir, listen, httpAddr, clusterID, dirID string
	peerHTTP                                            string
	initialVoters, bootstrapServers                     string
	autoJoin                                            bool
	onDamage                                            string
	seed                                                uint64
	electionTimeout, fetchTimeout, electionBackoffMax   time.Duration
	requestTimeout, retryBackoff, fetchMaxWait          time.Duration
	snapshotEvery, readyMaxLag                          int64
	logFormat, logLevel                                 string
	lagThreshold                                        int64
	slowSyncThreshold                                   time.Duration
	slowSyncResign                                      int
	config                                              string
	version, randomUUID                                 bool
	wire, listenerName                                  string
}

func newFlagSet(r *rawFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("kraftd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&r.id, "id", "", "this replica's node id `N` (required)")
	fs.StringVar(&r.voters, "voters", "", "the static `LIST` of voters, comma separated, each id@host:port or id:DIRECTORY-ID@host:port (this, or a dynamic quorum's -initial-voters or -bootstrap-servers, is required)")
	fs.StringVar(&r.initialVoters, "initial-voters", "", "a dynamic quorum's first voters, a `LIST` of id:DIRECTORY-ID@host:port or Kafka's id@host:port:DIRECTORY-ID: at a start, where to reach them and this replica's -listen default; the voters and the directory id themselves are the ones kraftd format wrote into -dir (this flag is ignored for them)")
	fs.StringVar(&r.bootstrapServers, "bootstrap-servers", "", "a dynamic quorum's replicas to find the leader through, a `LIST` of id@host:port, or Kafka's host:port without ids (controller.quorum.bootstrap.servers; default: -initial-voters)")
	fs.BoolVar(&r.autoJoin, "auto-join", false, "in a dynamic quorum, ask the leader to add this replica as a voter (controller.quorum.auto.join.enable)")
	fs.StringVar(&r.dir, "dir", "", "the data directory `PATH`: the quorum-state file, the log (in log/) and the snapshots (in snapshots/) (required)")
	fs.StringVar(&r.listen, "listen", "", "listen for the other replicas on `ADDR` (default: this replica's address in -voters; 127.0.0.1:0 for an observer)")
	fs.StringVar(&r.httpAddr, "http", "", "serve the HTTP API on `ADDR` (default: no HTTP API)")
	fs.StringVar(&r.peerHTTP, "peer-http", "", "the other replicas' HTTP API addresses, a `LIST` of id@host:port: a follower serves a linearizable GET /kv/{key} at a read point from the leader's GET /readindex (default: none, a follower answers 421)")
	fs.StringVar(&r.clusterID, "cluster-id", "", "the cluster `UUID`, the same at every replica of the cluster (required; kraftd -random-uuid makes one, like kafka-storage random-uuid); requests with another one are refused")
	fs.StringVar(&r.dirID, "directory-id", "", "this replica's directory `UUID`, checked against the one kraftd format wrote into -dir (a start with another one is refused)")
	fs.StringVar(&r.onDamage, "on-damage", "", "what to do when the data directory lost what it made durable: `replace` (move it aside and rejoin with a new directory id; a dynamic quorum's default) or refuse (exit; a static quorum's only choice)")
	fs.Uint64Var(&r.seed, "seed", 0, "seed of the election timeouts (default: derived from -id)")
	fs.DurationVar(&r.electionTimeout, "election-timeout", defaultElectionTimeout, "election timeout (controller.quorum.election.timeout.ms)")
	fs.DurationVar(&r.fetchTimeout, "fetch-timeout", defaultFetchTimeout, "fetch timeout (controller.quorum.fetch.timeout.ms)")
	fs.DurationVar(&r.electionBackoffMax, "election-backoff-max", defaultElectionBackoffMax, "the most a resigned leader's voters back off (controller.quorum.election.backoff.max.ms)")
	fs.DurationVar(&r.requestTimeout, "request-timeout", 0, "a request with no answer within it is sent again (default: 2s, or -fetch-timeout if shorter)")
	fs.DurationVar(&r.retryBackoff, "retry-backoff", node.DefaultRetryBackoff, "wait before a request is sent again")
	fs.DurationVar(&r.fetchMaxWait, "fetch-max-wait", 0, "how long the leader holds a Fetch with nothing new (default: 500ms, or -fetch-timeout/4 if shorter)")
	fs.Int64Var(&r.snapshotEvery, "snapshot-every", 0, "take a snapshot of the state machine every `N` applied offsets and delete the log before it (default: no snapshots)")
	fs.Int64Var(&r.readyMaxLag, "ready-max-lag", defaultReadyMaxLag, "GET /readyz: a follower is ready while its high watermark is at most `N` records behind the leader's")
	fs.StringVar(&r.logFormat, "log-format", "text", "the log's `FORMAT` on stderr: text (key=value) or json, one record a line, times in UTC")
	fs.StringVar(&r.logLevel, "log-level", "info", "log records of this `LEVEL` and above: debug, info, warn or error")
	fs.Int64Var(&r.lagThreshold, "lag-threshold", defaultLagThreshold, "the leader logs a voter more than `N` records behind its log end (negative: never)")
	fs.DurationVar(&r.slowSyncThreshold, "slow-sync-threshold", defaultSlowSyncThreshold, "log a log sync (fsync) that takes longer than this (negative: never)")
	fs.IntVar(&r.slowSyncResign, "slow-sync-resign", 0, "a leader whose last `N` syncs were each slower than -slow-sync-threshold resigns, if a majority of the voters is in contact (at most once per 10 minutes; 0: never, it only logs)")
	fs.StringVar(&r.config, "config", "", "read the configuration from `FILE`, in Java properties syntax with Kafka's controller.properties names (node.id, controller.quorum.voters, log.dirs, ...; docs/kraftd.md lists them); flags override it")
	fs.StringVar(&r.wire, "wire", wireKraft, "the quorum's wire `PROTOCOL`: kraft (kraft's own codec) or kafka (Kafka's: ApiVersions, Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot and DescribeQuorum, endpoints under the listener name CONTROLLER, snapshots in Kafka's format), to run in a quorum with Apache Kafka's controllers")
	fs.StringVar(&r.listenerName, "listener-name", "CONTROLLER", "with -wire kafka, the listener `NAME` the replicas' endpoints go under, in requests, VotersRecords and snapshots, and the listener of a Kafka voter kraftd dials (the first of controller.listener.names); the same on every replica")
	fs.BoolVar(&r.version, "version", false, "print kraftd's version and the Go version, and exit")
	fs.BoolVar(&r.randomUUID, "random-uuid", false, "print a new random UUID for -cluster-id, and exit (kafka-storage random-uuid)")
	return fs
}

const usageText = `Usage: kraftd format -cluster-id UUID -id N -dir PATH (-voters LIST | -initial-voters LIST | -standalone -listen ADDR | -no-initial-controllers)
       kraftd -cluster-id UUID -id N -voters LIST -dir PATH [flags]
       kraftd -cluster-id UUID -id N -initial-voters LIST -dir PATH [flags]
       kraftd -cluster-id UUID -id N -bootstrap-servers LIST [-auto-join] -dir PATH [flags]
       kraftd -config FILE [flags]
       kraftd -random-uuid | -version

kraftd runs one member of a KRaft quorum: a voter if -id is in -voters, an
observer otherwise. Its data directory is formatted once first with kraftd
format (kraftd format -h), as Kafka's kafka-storage format: a start refuses
an unformatted directory and never formats one. With -initial-voters or
-bootstrap-servers the voter set is dynamic (KIP-853): it lives in the log,
starts as the voters kraftd format wrote (-initial-voters or -standalone),
and changes with POST /voters/add, /voters/remove and /voters/update at the
leader (or -auto-join). It keeps Kafka's quorum-state file, a segment log and
snapshots in -dir, talks to the other replicas over TCP, applies the
committed records to a small state machine (a count and a running digest),
logs to stderr (-log-format, -log-level) and, with -http, serves GET /status, POST
/append, POST /resign, GET /voters, POST /voters/{add,remove,update}, GET
/metrics (Prometheus), GET /healthz and GET /readyz. Every replica of a
cluster needs the same -cluster-id. SIGINT or SIGTERM stops it gracefully
(a leader hands leadership over first).

Exit status: 0 after a graceful stop, 1 on a runtime error or a refused data
directory, 2 on bad flags.

Flags:
`

// usage is the -h text.
func usage() string {
	var b strings.Builder
	fs := newFlagSet(&rawFlags{})
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return usageText + b.String()
}

// defaultReadyMaxLag is -ready-max-lag's default.
const defaultReadyMaxLag = 1000

// errVersion and errRandomUUID ask for -version's and -random-uuid's
// output instead of a replica.
var (
	errVersion    = errors.New("-version")
	errRandomUUID = errors.New("-random-uuid")
)

// parseConfig parses and checks the command line, and the -config file
// under it. Errors name the flag (or the file's line); -h and -help give
// flag.ErrHelp, -version errVersion, -random-uuid errRandomUUID.
func parseConfig(args []string) (c config, err error) {
	var r rawFlags
	fs := newFlagSet(&r)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case r.version:
		return config{}, errVersion
	case r.randomUUID:
		return config{}, errRandomUUID
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	if r.config != "" {
		var warnings []string
		var origins map[string]string
		warnings, origins, err = applyConfigFile(fs, r.config, set)
		if err != nil {
			return c, fmt.Errorf("-config %s: %w", r.config, err)
		}
		c.warnings = warnings
		// An error about a flag the file set names the file's line.
		defer func() {
			if err == nil {
				return
			}
			for name, origin := range origins {
				if msg := err.Error(); strings.HasPrefix(msg, "-"+name+" ") || strings.HasPrefix(msg, "-"+name+":") {
					err = fmt.Errorf("-config %s: %s: %w", r.config, origin, err)
					return
				}
			}
		}()
	}
	if err := checkRequired(&r); err != nil {
		return c, err
	}
	if err := c.parseQuorum(&r); err != nil {
		return c, err
	}
	if err := c.parseAddresses(&r, set); err != nil {
		return c, err
	}
	if err := c.parseTimings(&r, set); err != nil {
		return c, err
	}
	if err := c.parseLimits(&r); err != nil {
		return c, err
	}
	if err := c.kraftConfig().Validate(); err != nil {
		return c, fmt.Errorf("-id/-voters: %w", err)
	}
	if !c.hasClusterID {
		return c, fmt.Errorf("-cluster-id is required: make one for the cluster with kraftd -random-uuid (kafka-storage random-uuid) and give it to every replica, for example -cluster-id %s", randomUUID())
	}
	return c, nil
}

// checkRequired checks the flags every replica needs and the quorum
// flags that exclude one another.
func checkRequired(r *rawFlags) error {
	switch {
	case r.id == "":
		return errors.New("-id is required")
	case r.voters == "" && r.initialVoters == "" && r.bootstrapServers == "":
		return errors.New("-voters is required (or, for a dynamic quorum, -initial-voters or -bootstrap-servers)")
	case r.voters != "" && (r.initialVoters != "" || r.bootstrapServers != ""):
		return errors.New("-voters (a static voter set) with -initial-voters or -bootstrap-servers (a dynamic one)")
	case r.autoJoin && r.voters != "":
		return errors.New("-auto-join needs a dynamic quorum (-initial-voters or -bootstrap-servers)")
	case r.dir == "":
		return errors.New("-dir is required")
	case r.wire != wireKraft && r.wire != wireKafka:
		return fmt.Errorf("-wire %q: want kraft or kafka", r.wire)
	}
	return nil
}

// parseQuorum parses the replica's identity and the quorum it belongs to:
// -id, -voters or -initial-voters and -bootstrap-servers, -auto-join,
// -peer-http, -directory-id and -on-damage; it decides whether the replica
// is an observer and defaults -listen to its voter address.
func (c *config) parseQuorum(r *rawFlags) error {
	id, err := parseNodeID(r.id)
	if err != nil {
		return fmt.Errorf("-id %q: %w", r.id, err)
	}
	c.id = id
	if r.voters != "" {
		if c.voters, err = parseVoters(r.voters); err != nil {
			return fmt.Errorf("-voters: %w", err)
		}
	}
	c.dynamic, c.autoJoin = r.voters == "", r.autoJoin
	if r.initialVoters != "" {
		if c.initialVoters, err = parseVoters(r.initialVoters); err != nil {
			return fmt.Errorf("-initial-voters: %w", err)
		}
		for _, v := range c.initialVoters {
			if v.key.DirectoryID == ([16]byte{}) {
				return fmt.Errorf("-initial-voters: voter %d has no directory id (want id:DIRECTORY-ID@host:port)", v.key.ID)
			}
		}
	}
	if r.bootstrapServers != "" {
		if c.bootstrapServers, err = parseServers(r.bootstrapServers); err != nil {
			return fmt.Errorf("-bootstrap-servers: %w", err)
		}
	}
	if r.peerHTTP != "" {
		ps, err := parseVoters(r.peerHTTP)
		if err != nil {
			return fmt.Errorf("-peer-http: %w", err)
		}
		c.peerHTTP = map[kraft.NodeID]string{}
		for _, p := range ps {
			c.peerHTTP[p.key.ID] = p.addr
		}
	}
	if r.dirID != "" {
		if c.dirID, err = parseUUID(r.dirID); err != nil {
			return fmt.Errorf("-directory-id %q: %w", r.dirID, err)
		}
		c.dirIDGiven = true
	}
	switch {
	case r.onDamage == "" && c.dynamic, r.onDamage == onDamageReplace && c.dynamic:
		c.onDamage = onDamageReplace
	case r.onDamage == "", r.onDamage == onDamageRefuse:
		c.onDamage = onDamageRefuse
	case r.onDamage == onDamageReplace:
		return errors.New("-on-damage replace needs a dynamic quorum (-initial-voters or -bootstrap-servers): a static voter cannot rejoin with a new directory id")
	default:
		return fmt.Errorf("-on-damage %q: want replace or refuse", r.onDamage)
	}
	c.observer = true
	for _, v := range append(append([]voter(nil), c.voters...), c.initialVoters...) {
		if v.key.ID != c.id {
			continue
		}
		if r.dirID == "" {
			c.dirID = v.key.DirectoryID
		}
		if v.key.Matches(kraft.ReplicaKey{ID: c.id, DirectoryID: c.dirID}) {
			c.observer = false
			if r.listen == "" {
				r.listen = v.addr
			}
		}
	}
	return nil
}

// parseAddresses parses -listen, -http, -dir, -cluster-id and -seed.
func (c *config) parseAddresses(r *rawFlags, set map[string]bool) error {
	var err error
	if r.listen == "" {
		r.listen = "127.0.0.1:0"
	}
	if err := checkAddr(r.listen, true); err != nil {
		return fmt.Errorf("-listen %q: %w", r.listen, err)
	}
	c.listen = r.listen
	if set["http"] {
		if err := checkAddr(r.httpAddr, true); err != nil {
			return fmt.Errorf("-http %q: %w", r.httpAddr, err)
		}
		c.httpAddr = r.httpAddr
	}
	c.dir = r.dir
	if r.clusterID != "" {
		if c.clusterID, err = parseUUID(r.clusterID); err != nil {
			return fmt.Errorf("-cluster-id %q: %w", r.clusterID, err)
		}
		c.hasClusterID = true
	}
	c.seed = r.seed
	if !set["seed"] {
		c.seed = seedFor(c.id)
	}
	return nil
}

// parseTimings parses the timeouts and backoffs, with Kafka's ratios for
// the ones not given; -snapshot-every is checked among them, before
// -fetch-max-wait.
func (c *config) parseTimings(r *rawFlags, set map[string]bool) error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"election-timeout", r.electionTimeout},
		{"fetch-timeout", r.fetchTimeout},
		{"election-backoff-max", r.electionBackoffMax},
		{"request-timeout", r.requestTimeout},
		{"retry-backoff", r.retryBackoff},
		{"fetch-max-wait", r.fetchMaxWait},
	} {
		if set[d.name] && d.v <= 0 {
			return fmt.Errorf("-%s %v: want a positive duration", d.name, d.v)
		}
	}
	c.electionTimeout, c.fetchTimeout, c.electionBackoffMax = r.electionTimeout, r.fetchTimeout, r.electionBackoffMax
	c.retryBackoff = r.retryBackoff
	// Kafka's defaults keep request timeout = fetch timeout and fetch max
	// wait = fetch timeout / 4; a shorter -fetch-timeout keeps the ratios.
	c.requestTimeout = r.requestTimeout
	if !set["request-timeout"] {
		c.requestTimeout = node.DefaultRequestTimeout
		if c.fetchTimeout < c.requestTimeout {
			c.requestTimeout = c.fetchTimeout
		}
	}
	if r.snapshotEvery < 0 {
		return fmt.Errorf("-snapshot-every %d: want 0 (no snapshots) or a positive count", r.snapshotEvery)
	}
	c.snapshotEvery = r.snapshotEvery
	c.fetchMaxWait = r.fetchMaxWait
	if !set["fetch-max-wait"] {
		c.fetchMaxWait = node.DefaultFetchMaxWait
		if c.fetchTimeout/4 < c.fetchMaxWait {
			c.fetchMaxWait = c.fetchTimeout / 4
		}
	}
	if c.fetchMaxWait >= c.fetchTimeout {
		// A caught-up follower would wait out its fetch timeout on every
		// long poll and start an election.
		return fmt.Errorf("-fetch-max-wait %v: want less than -fetch-timeout (%v)", c.fetchMaxWait, c.fetchTimeout)
	}
	return nil
}

// parseLimits parses -ready-max-lag, the logging flags and thresholds,
// -slow-sync-resign, -wire and -listener-name.
func (c *config) parseLimits(r *rawFlags) error {
	var err error
	if r.readyMaxLag < 0 {
		return fmt.Errorf("-ready-max-lag %d: want 0 or more records", r.readyMaxLag)
	}
	c.readyMaxLag = r.readyMaxLag
	if c.logLevel, err = parseLogFlags(r.logFormat, r.logLevel); err != nil {
		return err
	}
	c.logFormat = r.logFormat
	if r.lagThreshold == 0 || r.slowSyncThreshold == 0 {
		return errors.New("-lag-threshold and -slow-sync-threshold: want a positive value (negative: never log)")
	}
	c.lagThreshold, c.slowSyncThreshold = r.lagThreshold, r.slowSyncThreshold
	if r.slowSyncResign < 0 {
		return fmt.Errorf("-slow-sync-resign %d: want 0 (never) or a number of syncs", r.slowSyncResign)
	}
	c.slowSyncResign = r.slowSyncResign
	c.wire = r.wire
	c.listenerName = r.listenerName
	return nil
}

// kafkaUUID writes a UUID as Kafka does (Uuid.toString): 22 characters
// of URL-safe base64 without padding.
func kafkaUUID(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// randomUUID is a new random UUID in Kafka's form that does not start
// with '-' (Kafka's Uuid.randomUuid draws again: such an id reads as a
// flag on a command line).
func randomUUID() string {
	for {
		if s := kafkaUUID(uuid.New()); s[0] != '-' {
			return s
		}
	}
}

// parseNodeID parses a node id: an integer from 0 to MaxInt32.
func parseNodeID(s string) (kraft.NodeID, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("want a node id from 0 to %d", math.MaxInt32)
	}
	return kraft.NodeID(n), nil
}

// parseVoters parses "id@host:port,id:DIRID@host:port,...".
func parseVoters(s string) ([]voter, error) { return parseList(s, false) }

// parseServers parses -bootstrap-servers: parseVoters' entries, or
// Kafka's controller.quorum.bootstrap.servers, host:port entries without
// ids, which get the ids Kafka's QuorumConfig gives them, -2, -3, ...
// (never a replica's; docs/design.md D159).
func parseServers(s string) ([]voter, error) { return parseList(s, true) }

// parseList parses a list of replicas: id@host:port, id:DIRECTORY-ID@host:port,
// or Kafka's id@host:port:DIRECTORY-ID (kafka-storage format
// --initial-controllers); with anonymous also host:port (D159).
func parseList(s string, anonymous bool) ([]voter, error) {
	var vs []voter
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		at := strings.IndexByte(entry, '@')
		if at < 0 && anonymous {
			if err := checkAddr(entry, false); err != nil {
				return nil, fmt.Errorf("entry %q: address: %w", entry, err)
			}
			vs = append(vs, voter{key: kraft.ReplicaKey{ID: kraft.NodeID(-(i + 2))}, addr: entry})
			continue
		}
		if at < 0 {
			return nil, fmt.Errorf("entry %q: want id@host:port, id:directory-id@host:port or id@host:port:directory-id", entry)
		}
		key, addr := entry[:at], entry[at+1:]
		// Kafka's DynamicVoter syntax puts the directory id last.
		kafkaDir := ""
		hostEnd := 0 // the port's and directory id's colons follow the host
		if strings.HasPrefix(addr, "[") {
			hostEnd = strings.IndexByte(addr, ']') + 1
		}
		if tail := addr[hostEnd:]; strings.Count(tail, ":") == 2 {
			c := hostEnd + strings.LastIndexByte(tail, ':')
			addr, kafkaDir = addr[:c], addr[c+1:]
		}
		if kafkaDir != "" && strings.IndexByte(key, ':') >= 0 {
			return nil, fmt.Errorf("entry %q: two directory ids", entry)
		}
		var v voter
		idText, dirText := key, ""
		if i := strings.IndexByte(key, ':'); i >= 0 {
			idText, dirText = key[:i], key[i+1:]
		}
		id, err := parseNodeID(idText)
		if err != nil {
			return nil, fmt.Errorf("entry %q: id %q: %w", entry, idText, err)
		}
		v.key.ID = id
		if kafkaDir != "" {
			dirText = kafkaDir
		}
		if dirText != "" || kafkaDir != "" || strings.IndexByte(key, ':') >= 0 {
			if v.key.DirectoryID, err = parseUUID(dirText); err != nil {
				return nil, fmt.Errorf("entry %q: directory id %q: %w", entry, dirText, err)
			}
		}
		if err := checkAddr(addr, false); err != nil {
			return nil, fmt.Errorf("entry %q: address %q: %w", entry, addr, err)
		}
		v.addr = addr
		for _, w := range vs {
			if w.key.ID == v.key.ID {
				return nil, fmt.Errorf("voter id %d appears twice", v.key.ID)
			}
			if w.addr == v.addr {
				return nil, fmt.Errorf("voters %d and %d have the same address %s", w.key.ID, v.key.ID, v.addr)
			}
		}
		vs = append(vs, v)
	}
	if len(vs) > kraft.MaxVoters {
		return nil, fmt.Errorf("%d voters, at most %d are supported", len(vs), kraft.MaxVoters)
	}
	return vs, nil
}

// checkAddr checks a host:port address; port 0 (any free port) only if
// anyPort.
func checkAddr(addr string, anyPort bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port")
	}
	p, err := strconv.Atoi(port)
	lowest := 1
	if anyPort {
		lowest = 0
	}
	if err != nil || p < lowest || p > 65535 {
		return fmt.Errorf("port %q: want %d to 65535", port, lowest)
	}
	if host == "" && !anyPort {
		return errors.New("want a host")
	}
	return nil
}

// parseUUID parses a UUID in its usual text form (8-4-4-4-12 hex digits,
// or 32 hex digits) or in Kafka's (22 characters of URL-safe base64, as
// kafka-storage prints directory and cluster ids). The zero UUID is
// refused: it means "none".
func parseUUID(s string) ([16]byte, error) {
	var u [16]byte
	var b []byte
	var err error
	switch len(s) {
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return u, errors.New("want a UUID (8-4-4-4-12 hex digits, or Kafka's 22-character base64)")
		}
		b, err = hex.DecodeString(s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:])
	case 32:
		b, err = hex.DecodeString(s)
	case 22:
		b, err = base64.RawURLEncoding.DecodeString(s)
	case 24:
		b, err = base64.URLEncoding.DecodeString(s)
	default:
		err = errors.New("bad length")
	}
	if err != nil || len(b) != 16 {
		return u, errors.New("want a UUID (8-4-4-4-12 hex digits, or Kafka's 22-character base64)")
	}
	copy(u[:], b)
	if u == ([16]byte{}) {
		return u, errors.New("the zero UUID is reserved")
	}
	return u, nil
}

// seedFor is the default seed of a replica: a mix of its id (splitmix64),
// so replicas draw different election timeouts.
func seedFor(id kraft.NodeID) uint64 {
	z := uint64(id) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
