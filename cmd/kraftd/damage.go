package main

import (
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/datadir"
	kreplica "github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// A damaged data directory at start (docs/design.md D90, D91).

// damagedPrefix names the directories, inside the data directory, that a
// replica of a dynamic quorum moves damaged data to (D91).
const damagedPrefix = datadir.DamagedPrefix

// What kraftd does with a damaged data directory (-on-damage).
const (
	onDamageReplace = "replace" // a dynamic quorum's default: rejoin as a replaced disk
	onDamageRefuse  = "refuse"  // exit with status 1, saying what is damaged and what to do
)

// dataFS is the file system the data directory is read and replaced
// through: the operating system's, or in tests one whose process dies.
var dataFS = storage.OS()

// isDamage: err says that something the replica made durable is gone or
// changed on disk.
func isDamage(err error) bool { return datadir.IsDamage(err) }

// openDataDir reads the data directory's identity (package datadir:
// Load) and opens and checks what it holds (Open). An unformatted
// directory, or one of another cluster, node, quorum kind, voter set or
// directory id, is refused with what to do (D108, D109); the identity
// found becomes cfg's (its directory id, and whether it is a voter). When
// the directory is damaged, a replica of a static quorum (or one told
// -on-damage refuse, or given -directory-id) logs what is damaged and what
// to do, and openDataDir returns false: kraftd exits with status 1. A
// replica of a dynamic quorum moves the damaged data aside under a new
// directory id, crash-safely (datadir.Replace, D111), and opens the
// directory it left, empty: it starts as an observer and rejoins as a
// replaced disk (D91).
func openDataDir(cfg *config, logger *log.Logger) (*datadir.Data, bool) {
	fsys := dataFS
	e := datadir.Expect{ClusterID: cfg.clusterID, NodeID: cfg.id, Dynamic: cfg.dynamic,
		Logf: func(format string, args ...interface{}) { logger.Printf("kraftd: "+format, args...) }}
	for _, v := range cfg.voters {
		e.Voters = append(e.Voters, v.key)
	}
	if cfg.dirIDGiven {
		e.DirectoryID = cfg.dirID
	} else {
		e.LegacyDirectoryID = cfg.dirID // the -initial-voters or -voters entry's
	}
	id, err := datadir.Load(fsys, cfg.dir, e)
	oldKnown := err == nil
	if err == nil {
		cfg.setIdentity(id, nil)
		if cfg.dynamic && cfg.initialVoters != nil {
			logger.Printf("kraftd: -initial-voters: %s is formatted, so they give this start only addresses (peers, -listen): "+
				"the directory id and the quorum's first voters are the directory's (kraftd format wrote them)", cfg.dir)
		}
		var d *datadir.Data
		if d, err = datadir.Open(fsys, cfg.dir, storage.Options{}); err == nil {
			cfg.setIdentity(id, d.Bootstrap)
			logOpened(cfg, d, logger)
			return d, true
		}
	}
	if !isDamage(err) {
		logger.Printf("kraftd: %s", refusal(*cfg, err))
		return nil, false
	}
	logger.Printf("kraftd: damaged: %v", err)
	if !cfg.dynamic || cfg.onDamage == onDamageRefuse || cfg.dirIDGiven {
		logger.Print(damageAdvice(*cfg))
		return nil, false
	}
	// The old key, as far as it is known: not when meta.properties is
	// what is damaged.
	old, oldJSON := uuid.UUID(cfg.dirID).String(), fmt.Sprintf("%q", uuid.UUID(cfg.dirID).String())
	if !oldKnown {
		old, oldJSON = fmt.Sprintf("unknown: the voter with id %d in GET /voters", cfg.id), "OLD"
	}
	aside := damagedPrefix + time.Now().UTC().Format("20060102T150405.000000000Z")
	fresh := datadir.Identity{ClusterID: cfg.clusterID, NodeID: cfg.id, DirectoryID: uuid.New(), Dynamic: true}
	if err := datadir.Replace(fsys, cfg.dir, fresh, aside); err != nil {
		logger.Printf("kraftd: moving the damaged data of %s aside: %v", cfg.dir, err)
		logger.Print(damageAdvice(*cfg))
		return nil, false
	}
	cfg.setIdentity(fresh, nil)
	next := "it asks the leader to remove its old key and add the new one by itself (-auto-join)"
	if !cfg.autoJoin {
		next = fmt.Sprintf("on the leader, remove the old key (POST /voters/remove {\"id\": %d, \"directory_id\": %s}) and add the new one "+
			"(POST /voters/add {\"id\": %d, \"directory_id\": %q, \"endpoint\": ITS-ADDRESS}) once it has caught up, or restart it with -auto-join",
			cfg.id, oldJSON, cfg.id, uuid.UUID(fresh.DirectoryID).String())
	}
	logger.Printf("kraftd: the data directory %s is damaged: moved the damaged data aside to %s (remove it once it is no longer needed); "+
		"starting empty as a replaced disk (KIP-853) with the new directory id %s (the old one was %s): "+
		"an observer until it has caught up from the leader; %s",
		cfg.dir, filepath.Join(cfg.dir, aside), uuid.UUID(fresh.DirectoryID), old, next)
	d, err := datadir.Open(fsys, cfg.dir, storage.Options{})
	if err != nil {
		logger.Printf("kraftd: damaged: %v", err)
		return nil, false
	}
	cfg.setIdentity(fresh, d.Bootstrap)
	logOpened(cfg, d, logger)
	return d, true
}

// logOpened logs what the data directory holds.
func logOpened(cfg *config, d *datadir.Data, logger *log.Logger) {
	logger.Printf("kraftd: log %s: %d records in %d segments, ends at %+v", datadir.LogDir(cfg.dir), d.Recovery.Records, d.Recovery.Segments, d.Log.End())
	if d.Recovery.DroppedBytes > 0 {
		logger.Printf("kraftd: log recovery dropped a torn tail of %d bytes past the recovery point %d (never synced): %s",
			d.Recovery.DroppedBytes, d.Recovery.RecoveryPoint, d.Recovery.Cause)
	}
	if id, ok := d.Snapshots.Latest(); ok {
		logger.Printf("kraftd: snapshots %s: %d, the latest ends at %+v; the log starts at %d", datadir.SnapshotDir(cfg.dir), len(d.Snapshots.List()), id, d.Log.StartOffset())
	}
}

// refusal says why a start was refused for its data directory's identity
// and what to do.
func refusal(cfg config, err error) string {
	var ue *datadir.UnformattedError
	var me *datadir.MismatchError
	var ve *datadir.VotersMismatchError
	switch {
	case errors.As(err, &ue):
		return fmt.Sprintf("%v. kraftd never formats at a start: a new replica's directory is formatted once first, "+
			"with kraftd format -cluster-id %s -id %d -dir %s and -voters LIST (a static quorum), -initial-voters LIST or -standalone "+
			"(the first voters of a dynamic quorum) or -no-initial-controllers (a replica added later). A replica that ran before and "+
			"lost its data directory must not be formatted with -initial-voters or -standalone again: in a dynamic quorum, format it "+
			"as a new disk (-no-initial-controllers), start it with -bootstrap-servers naming the others, and add it back "+
			"(-auto-join, or remove its old key and add the new one at the leader); in a static quorum, restore its directory "+
			"from a copy taken while it was stopped", ue, kafkaUUID(cfg.clusterID), cfg.id, cfg.dir)
	case errors.As(err, &ve):
		return fmt.Sprintf("%v (-voters %s): a static quorum's voter set changes only deliberately, with every replica stopped: "+
			"run kraftd format -update-voters -cluster-id %s -id N -dir DIR -voters NEWLIST on each replica, then start them "+
			"(a replica started alone with another set could elect itself and acknowledge records the others never see)",
			ve, votersString(cfg.voters), kafkaUUID(cfg.clusterID))
	case errors.As(err, &me) && me.What == "cluster":
		return fmt.Sprintf("the data directory %s belongs to cluster %s, not to -cluster-id %s (%s): "+
			"start this replica with its cluster's id, or format an empty data directory to join cluster %s",
			cfg.dir, me.Stored, me.Given, filepath.Join(cfg.dir, datadir.MetaFileName), me.Given)
	case errors.As(err, &me) && me.What == "node":
		return fmt.Sprintf("the data directory %s belongs to node %s, not to -id %s (%s): "+
			"a replica's log and votes are its own; format an empty data directory for node %s",
			cfg.dir, me.Stored, me.Given, filepath.Join(cfg.dir, datadir.MetaFileName), me.Given)
	case errors.As(err, &me):
		return fmt.Sprintf("%v: start it as it was formatted, or format an empty data directory", err)
	}
	return err.Error()
}

// setIdentity makes id the replica's identity: its directory id, and
// whether it is a voter: of -voters in a static quorum; in a dynamic one,
// of the bootstrap checkpoint's voters (a replica added later, or a
// replaced disk, starts as an observer and learns the voter set from the
// leader's log).
func (c *config) setIdentity(id datadir.Identity, bootstrap []byte) {
	c.dirID = id.DirectoryID
	c.observer = true
	local := kraft.ReplicaKey{ID: c.id, DirectoryID: c.dirID}
	if !c.dynamic {
		for _, v := range c.voters {
			if v.key.Matches(local) {
				c.observer = false
			}
		}
		return
	}
	vs, err := kreplica.DecodeVoters(bootstrap)
	if bootstrap == nil || err != nil {
		return // a bootstrap checkpoint that does not decode is node.Start's error
	}
	for _, v := range vs {
		if v.Key.Matches(local) {
			c.observer = false
		}
	}
}

// bootstrapString describes the bootstrap checkpoint for the start line.
func bootstrapString(b []byte) string {
	vs, err := kreplica.DecodeVoters(b)
	if b == nil || err != nil {
		return "no bootstrap checkpoint: the voters come from the leader"
	}
	s := "bootstrap checkpoint voters "
	for i, v := range vs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%v@%s", v.Key, v.Endpoint)
	}
	return s
}

// damageAdvice says what to do with a data directory whose synced data is
// damaged, where kraftd refuses to start on it: a replica that lost records
// it acknowledged, or its vote, could make the quorum lose a committed
// record or elect two leaders in one epoch.
func damageAdvice(cfg config) string {
	s := fmt.Sprintf("kraftd: the data directory %s is damaged: records or a vote this replica made durable are gone, and it must not rejoin with it as it is. ", cfg.dir)
	if cfg.dynamic {
		s += "Restore the directory from a copy taken while the replica was stopped, or let it rejoin as a replaced disk: "
		switch {
		case cfg.dirIDGiven:
			return s + "start it again without -directory-id and with -on-damage replace, and kraftd moves the damaged data aside " +
				"and starts empty with a new directory id; or move the directory aside yourself, format an empty one as a new disk " +
				"(kraftd format -no-initial-controllers) and start it with -bootstrap-servers naming the others. " +
				"On the leader, remove its old directory id from the voters (POST /voters/remove) and add the new one (POST /voters/add), or use -auto-join."
		default:
			return s + "start it again with -on-damage replace (the default in a dynamic quorum), and kraftd moves the damaged data aside " +
				"and starts empty with a new directory id; on the leader, remove its old directory id from the voters (POST /voters/remove) " +
				"and add the new one (POST /voters/add), or use -auto-join."
		}
	}
	return s + "Restore the directory from a copy taken while the replica was stopped. Do not format a new, empty directory for it (kraftd format) " +
		"in a static quorum while the others cannot form a majority without it: it may have held acknowledged records they lack " +
		"(a static voter cannot rejoin with a new directory id; a dynamic quorum, -initial-voters, can replace a damaged disk by itself)."
}
