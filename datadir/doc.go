// Package datadir formats a kraft replica's data directory, keeps its
// identity, opens and checks what the directory holds, and replaces a
// damaged one, over a storage.FS (the operating system's, or a simulated
// or failing disk).
//
// The identity of a replica is the cluster id, its node id, its directory
// id and, in a static quorum, the voter set; it lives in one file,
// DIR/meta.properties, checksummed and written atomically and durably
// (Kafka's MetaProperties, which keeps cluster.id, node.id and
// directory.id there). It is written once, by Format (Kafka's
// kafka-storage format), and only read afterwards: Load refuses a
// directory without it (ErrUnformatted), so a replica that lost its disk
// never takes a new identity, nor its old one, by itself
// (docs/design.md D108). A dynamic quorum's first voters are written at
// format time too, as the bootstrap checkpoint (storage.BootstrapPath),
// the only place a start reads them from.
//
// Open opens the log, the quorum state, the snapshots and the bootstrap
// checkpoint and checks them (docs/design.md D70-D72, D90); Replace makes
// a damaged directory a replaced disk (KIP-853, docs/design.md D91) in an
// order that a crash at any step cannot turn into a replica presenting a
// key whose durable state it lost (D111).
//
// Directories written by earlier versions of kraftd (a meta.properties
// without a directory id or quorum kind, a directory.id file beside it)
// are migrated by Load at their first start (D110).
package datadir
