// Command kraftd runs one member of a KRaft quorum as a process: package
// node's runtime over TCP, with Kafka's quorum-state file, a segment log and
// snapshots (package storage) in a data directory, a demo state machine
// that the committed records are applied to (with -snapshot-every, it is
// snapshotted and the log deleted behind the snapshots), and an optional
// HTTP endpoint to append records, put, read, compare-and-set and delete
// the keys of the state machine's replicated map (/kv, kvhttp.go), read
// the replica's status and make the leader resign, and the operational
// endpoints /metrics (Prometheus),
// /healthz and /readyz. Every replica of a cluster gets the same cluster id
// (kraftd -random-uuid makes one), and each data directory is formatted
// once before the first start (kraftd format, as Kafka's kafka-storage
// format; a start never formats, docs/design.md D108):
//
//	kraftd format -cluster-id MkU3OEVBNTcwNTJENDM2Qg -id 1 \
//		-voters 1@127.0.0.1:9091,2@127.0.0.1:9092,3@127.0.0.1:9093 -dir /tmp/kraft1
//	kraftd -cluster-id MkU3OEVBNTcwNTJENDM2Qg -id 1 \
//		-voters 1@127.0.0.1:9091,2@127.0.0.1:9092,3@127.0.0.1:9093 \
//		-dir /tmp/kraft1 -http 127.0.0.1:8081
//
// A replica whose -id is not in -voters runs as an observer. A dynamic
// quorum (KIP-853) starts from the voters its first replicas were
// formatted with (-initial-voters or -standalone), and grows with replicas
// formatted with -no-initial-controllers and started with
// -bootstrap-servers, which are added through POST /voters/add at the
// leader (or ask for it themselves with -auto-join):
//
//	kraftd format -cluster-id CID -id 1 -initial-voters 1:DIRID@127.0.0.1:9091 -dir /tmp/kraft1
//	kraftd -cluster-id CID -id 1 -initial-voters 1:DIRID@127.0.0.1:9091 -dir /tmp/kraft1 -http 127.0.0.1:8081
//	kraftd format -cluster-id CID -id 2 -no-initial-controllers -dir /tmp/kraft2
//	kraftd -cluster-id CID -id 2 -bootstrap-servers 1@127.0.0.1:9091 -listen 127.0.0.1:9092 -dir /tmp/kraft2 -http 127.0.0.1:8082
//
// The flags may come from a file in Java properties syntax with the names
// of Kafka's controller.properties (-config; flags override it).
//
// kraftd logs to stderr with log/slog, as text or JSON (-log-format,
// -log-level), times in UTC: role changes with kraft's reasons, voter-set
// changes, snapshots, peers it cannot reach, cluster id refusals, lagging
// voters and slow syncs, each with what to do. SIGINT or SIGTERM stops the
// replica gracefully: a leader hands leadership over first (up to 5s).
// docs/kraftd.md shows how to run a three-voter cluster by hand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	kreplica "github.com/kraftquorum/kraft/replica"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft/datadir"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/storage"
)

// Exit statuses.
const (
	exitOK   = 0
	exitFail = 1 // the replica could not start or stopped on an error
	exitBad  = 2 // bad flags
)

// shutdownTimeout bounds a leader's handover when it is stopped: the wait
// for another replica to lead.
const shutdownTimeout = 5 * time.Second

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, sigs))
}

// run parses args and runs the replica until a signal arrives on sigs or
// it fails; it returns the exit status.
func run(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	if len(args) > 0 && args[0] == "format" {
		return runFormat(args[1:], stdout, stderr)
	}
	cfg, err := parseConfig(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = fmt.Fprint(stdout, usage())
		return exitOK
	case errors.Is(err, errVersion):
		_, _ = fmt.Fprintln(stdout, version())
		return exitOK
	case errors.Is(err, errRandomUUID):
		_, _ = fmt.Fprintln(stdout, randomUUID())
		return exitOK
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "kraftd: %v (kraftd -h for help)\n", err)
		return exitBad
	}
	cfg.logger = newSlogger(stderr, cfg.logFormat, cfg.logLevel)
	return serve(cfg, lineLogger(cfg.logger), sigs)
}

// serve runs the replica described by cfg.
func serve(cfg config, logger *log.Logger, sigs <-chan os.Signal) int {
	logger.Printf("kraftd: %s", version())
	for _, w := range cfg.warnings {
		logger.Printf("kraftd: -config: %s (ignored)", w)
	}
	if _, err := os.Stat(cfg.dir); errors.Is(err, os.ErrNotExist) {
		// A start never formats, nor creates the directory (D108).
		logger.Printf("kraftd: %s", refusal(cfg, &datadir.UnformattedError{Dir: cfg.dir}))
		return exitFail
	}
	// One replica per data directory: a second kraftd on it fails here.
	lock, err := storage.LockDir(cfg.dir)
	if err != nil {
		logger.Printf("kraftd: %v", err)
		return exitFail
	}
	defer func() { _ = lock.Unlock() }()
	// An unformatted directory is refused (docs/design.md D108); a
	// damaged one is refused, or in a dynamic quorum replaced (D90, D91,
	// D111).
	data, ok := openDataDir(&cfg, logger)
	if !ok {
		return exitFail
	}
	lg, snaps, qsPath := data.Log, data.Snapshots, data.QuorumStatePath
	tr, err := newTransport(cfg, logger.Printf)
	if err != nil {
		_ = lg.Close()
		_ = snaps.Close()
		logger.Printf("kraftd: %v", err)
		return exitFail
	}
	announce(cfg, logger, tr, data)
	m := &machine{}
	flog, err := withFaults(lg, logger)
	if err != nil {
		logger.Printf("kraftd: %v", err)
		_ = lg.Close()
		_ = snaps.Close()
		_ = tr.Close()
		return exitFail
	}
	ncfg := nodeConfig(cfg, m, flog, snaps, qsPath, tr)
	n, err := node.Start(ncfg)
	if err != nil {
		_ = lg.Close()
		_ = snaps.Close()
		_ = tr.Close()
		logger.Printf("kraftd: starting the replica: %v", err)
		return exitFail
	}
	serveDescribe(tr, n, cfg)

	var srv *httpServer
	httpErr := make(chan error, 1)
	if cfg.httpAddr != "" {
		if srv, ok = startHTTP(cfg, n, m, tr, logger, httpErr); !ok {
			return exitFail
		}
	}

	select {
	case sig := <-sigs:
		return stopGracefully(sig, sigs, n, srv, logger)
	case <-n.Done():
		logger.Printf("kraftd: the replica stopped: %v", n.Close())
	case err := <-httpErr:
		logger.Printf("kraftd: HTTP server: %v", err)
		_ = n.Close()
	}
	if srv != nil {
		srv.stop(0)
	}
	return exitFail
}

// announce logs the replica's identity, quorum, address and cluster.
func announce(cfg config, logger *log.Logger, tr quorumTransport, data *datadir.Data) {
	role := "voter"
	if cfg.observer {
		role = "observer"
	}
	if cfg.dynamic {
		logger.Printf("kraftd: replica %d:%s (%s) listening on %s, dynamic quorum (%s, bootstrap servers %s, auto-join %v), data in %s",
			cfg.id, uuid.UUID(cfg.dirID), role, tr.Addr(), bootstrapString(data.Bootstrap), votersString(cfg.bootstrapServers), cfg.autoJoin, cfg.dir)
	} else {
		logger.Printf("kraftd: replica %d (%s) listening on %s (%s wire protocol), voters %s, data in %s", cfg.id, role, tr.Addr(), cfg.wire, votersString(cfg.voters), cfg.dir)
	}
	logger.Printf("kraftd: cluster id %s (%s)", kafkaUUID(cfg.clusterID), uuid.UUID(cfg.clusterID))
}

// nodeConfig is the node.Config of the replica cfg describes, applying
// committed records to m.
func nodeConfig(cfg config, m *machine, flog storage.Log, snaps *storage.Snapshots, qsPath string, tr quorumTransport) node.Config {
	ncfg := node.Config{
		Config: kreplica.Config{
			Kraft:   cfg.kraftConfig(),
			Log:     flog,
			Records: node.FileRecords{Path: qsPath},

			RequestTimeout: cfg.requestTimeout,
			RetryBackoff:   cfg.retryBackoff,
			FetchMaxWait:   cfg.fetchMaxWait,

			Endpoint: tr.Addr().String(),
		},
		Transport: tr,

		OnCommit:  m.apply,
		Snapshots: snaps,
		Restore:   m.restore,
		Logger:    cfg.logger,

		LagThreshold:      cfg.lagThreshold,
		SlowSyncThreshold: cfg.slowSyncThreshold,
		SlowSyncResign:    cfg.slowSyncResign,
	}
	if cfg.dynamic {
		// The voters the quorum started with are the bootstrap checkpoint
		// that kraftd format wrote; never -initial-voters at a start
		// (D108), so node never writes one (InitialVoters is nil).
		ncfg.BootstrapPath = storage.BootstrapPath(cfg.dir)
		ncfg.BootstrapServers = cfg.bootstrapIDs()
	}
	if cfg.snapshotEvery > 0 {
		ncfg.Snapshot, ncfg.SnapshotEvery = m.snapshot, cfg.snapshotEvery
	}
	if cfg.wire == wireKafka {
		// Kafka's election rules beside Kafka's replicas (docs/design.md
		// D84), its snapshot format (D83).
		ncfg.Kraft.KafkaFailover = true
		ncfg.Restore = kafkaRestore(m)
		f := kafkaFormat(cfg)
		ncfg.SnapshotVoters = kafkaSnapshotVoters(f)
		if ncfg.Snapshot != nil {
			ncfg.Snapshot = kafkaSnapshot(m, f)
		}
	}
	return ncfg
}

// startHTTP serves the HTTP API on -http; the server's end is sent to
// httpErr. It closes n and returns false if it cannot listen.
func startHTTP(cfg config, n *node.Node, m *machine, tr quorumTransport, logger *log.Logger, httpErr chan<- error) (*httpServer, bool) {
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		logger.Printf("kraftd: -http: %v", err)
		_ = n.Close()
		return nil, false
	}
	local := node.VoterInfo{ID: cfg.id, DirectoryID: cfg.dirID, Endpoint: tr.Addr().String()}
	srv := newHTTPServer(newHandler(n, m, local, cfg.readyMaxLag, withPeerHTTP(staticPeers(cfg.peerHTTP))))
	logger.Printf("kraftd: HTTP API on http://%s", ln.Addr())
	go func() { httpErr <- srv.Serve(ln) }()
	return srv, true
}

// stopGracefully stops the replica on the signal sig (a leader hands
// leadership over first); a second signal exits at once.
func stopGracefully(sig os.Signal, sigs <-chan os.Signal, n *node.Node, srv *httpServer, logger *log.Logger) int {
	logger.Printf("kraftd: %v: stopping", sig)
	go func() {
		sig := <-sigs
		logger.Printf("kraftd: %v again: exiting at once", sig)
		os.Exit(exitFail)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	h, err := n.Shutdown(ctx)
	switch {
	case h.HandedOver():
		logger.Printf("kraftd: handed leadership over to %d in epoch %d", h.Successor, h.Epoch)
	case h.WasLeader:
		logger.Printf("kraftd: stopped leading without a successor")
	}
	if srv != nil {
		srv.stop(time.Second)
	}
	if err != nil {
		logger.Printf("kraftd: stopped with an error: %v", err)
		return exitFail
	}
	logger.Printf("kraftd: stopped")
	return exitOK
}

func votersString(vs []voter) string {
	if len(vs) == 0 {
		return "none"
	}
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%v@%s", v.key, v.addr)
	}
	return s
}
