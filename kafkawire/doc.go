// Package kafkawire speaks Apache Kafka's wire protocol for kraft: the
// framing, headers and API versions of Kafka's raft RPCs, the mapping
// between kraft's events and Kafka's messages, and Kafka's v2 record
// batches, so that a kraft replica can be a member of a quorum whose other
// members are Apache Kafka's own KafkaRaftClient.
//
// It is a module of its own (github.com/kraftquorum/kraft/kafkawire), so
// the kraft module keeps its dependencies. Message bodies are
// github.com/twmb/franz-go/pkg/kmsg's request and response types; the
// mapping to kraft's events is this package's (docs/wire-mapping.md maps
// every field).
//
// # Frames
//
// A frame is an int32 big-endian size and that many bytes (ReadFrame). A
// request frame holds the request header, v1 (api key, api version,
// correlation id, nullable client id) below the API version's first
// flexible version (KIP-482) and v2 (v1 plus tagged fields) from it, then
// the body (AppendRequest, ReadRequest). A response frame holds the
// response header, v0 (correlation id) or v1 (plus tagged fields) by the
// same rule, except that ApiVersions responses always use v0, then the body
// (AppendResponse, ReadResponse; a client looks up the request's API and
// version by ResponseCorrelationID first). An ApiVersions answer with
// UNSUPPORTED_VERSION is always read as v0, and the client asks again at
// the version APIVersionsRetry names.
//
// # Versions
//
// Each side sends ApiVersions first on a connection and then uses, per
// API, the highest version both support (Negotiate; Kafka's
// NodeApiVersions.latestUsableVersion). What kraft sends and accepts
// (Supported):
//
//	API               key  accepts  sends (toward Kafka 4.x)
//	Fetch               1  12-17    17
//	ApiVersions        18  0-4      4
//	Vote               52  0-2      2 (pre-vote needs v2)
//	BeginQuorumEpoch   53  0-1      1
//	EndQuorumEpoch     54  0-1      1
//	DescribeQuorum     55  0-2      2
//	FetchSnapshot      59  0-1      1
//	AddRaftVoter       80  0        0
//	RemoveRaftVoter    81  0        0
//	UpdateRaftVoter    82  0        0
//
// Fetch starts at v12, the first version with the fields of KIP-595
// (cluster id, last fetched epoch, diverging epoch, current leader,
// snapshot id); v13 names the partition by topic id, v15 moves the replica
// id into ReplicaState, v16 adds node endpoints, v17 the replica's
// directory id. A peer without Vote v2 gets no pre-vote (PreVote; KIP-996):
// the host steps kraft's ReceiveVoteResponse with UNSUPPORTED_VERSION and a
// Prospective becomes Candidate. An ApiVersions request above v4 gets an
// ApiVersions v0 answer with UNSUPPORTED_VERSION and the table
// (APIVersionsAnswer, KIP-511). DescribeQuorum and the KIP-853 voter
// changes are framed here; mapping them to kraft's events and answers is
// the transport's: Transport serves the voter changes, and lists them in
// its ApiVersions answers, once ServeVoterChanges gave it a node.Node to
// carry them out (TransportVersions; docs/design.md D160).
//
// Older versions carry less, and the fields they lack decode to their
// defaults: Vote v0 has no voter id (-1) and no directory ids;
// BeginQuorumEpoch v0 has no voter id, voter directory id or leader
// endpoints; EndQuorumEpoch v0 lists preferred successors by id only;
// Fetch below v17 and FetchSnapshot v0 carry no replica directory id;
// responses below v1 (v16 for Fetch) carry no node endpoints. A pre-vote
// cannot be sent below Vote v2, nor a Fetch below v12 (ErrNotRepresentable).
//
// # Events
//
// EncodeRequest and EncodeResponse make a kmsg message of a Msg (a kraft
// event and what the wire carries besides: a Fetch response's records, a
// FetchSnapshot response's chunk, endpoints, an EndQuorumEpoch's preferred
// successors) at a version; DecodeRequest and DecodeResponse make the event
// the receiver steps. Everything is about the partition __cluster_metadata-0
// (Fetch v13+ by Kafka's topic id Uuid.METADATA_TOPIC_ID); cluster ids are
// Kafka Uuid strings (22 characters of URL-safe base64); error codes are
// kraft.ErrorCode's, which are Kafka's; INCONSISTENT_CLUSTER_ID goes in
// the top-level error_code and any top-level error decodes to a
// *TopLevelError, not an event. Endpoints go under the listener name
// CONTROLLER.
//
// # Records
//
// A Fetch response carries v2 record batches (AppendBatch, ReadBatches:
// CRC-32C checked). AppendEntries and ReadEntries convert kraft's log
// entries: a data entry is a data record (null key, the payload as value);
// a LeaderChange entry is a LeaderChange control batch (LeaderChangeMessage
// v0); a read barrier is a LeaderChange control batch with leader -1.
// VotersRecord and KRaftVersion control records cross in Kafka's encoding
// (docs/design.md D156), a voter's listeners under the listener name of a
// Format (the transport's: Transport.Format; D310). Snapshots in Kafka's format (a
// SnapshotHeader control batch, data batches, a SnapshotFooter control
// batch) are written by SnapshotWriter and read by ReadSnapshot; a runtime
// in a quorum with Kafka's replicas keeps its snapshots in that format, and
// FetchSnapshot carries them as they are (docs/design.md D83).
//
// # Transport
//
// Transport is a node.Transport in Kafka's protocol (docs/design.md D80,
// D81): kraft's runtime (package node) over it votes in, follows and leads
// a quorum of Apache Kafka's own KRaft replicas. It dials one connection
// per peer for its requests and sends ApiVersions first on each, answers
// ApiVersions and DescribeQuorum itself (ServeDescribeQuorum), maps Kafka's
// int32 correlation ids to the runtime's uint64 ones, and advertises the
// replica's endpoint under its listener name (TransportConfig.ListenerName,
// default CONTROLLER). Its connections,
// queues, reconnection backoff and peer-down reports are the connection
// layer it shares with node.TCPTransport (package
// github.com/kraftquorum/kraft/internal/stream, docs/design.md D220);
// this package adds Kafka's frames and handshake. Describe is a
// DescribeQuorum client, as kafka-metadata-quorum describe.
package kafkawire
