package kafkawire

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/stream"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/replica"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults of TransportConfig, as node.TCPConfig's.
const (
	DefaultDialTimeout         = time.Second
	DefaultReconnectBackoff    = 50 * time.Millisecond // Kafka's reconnect.backoff.ms
	DefaultMaxReconnectBackoff = time.Second           // Kafka's reconnect.backoff.max.ms
	DefaultWriteTimeout        = 10 * time.Second
	DefaultQueueSize           = 1024
)

// TransportVersions is what Transport serves: Supported without the
// KIP-853 voter changes (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter),
// which it serves and advertises only once ServeVoterChanges gave it a
// node to carry them out (docs/design.md D160).
var TransportVersions = func() Versions {
	vs := Versions{}
	for k, v := range Supported {
		if k != AddRaftVoter && k != RemoveRaftVoter && k != UpdateRaftVoter {
			vs[k] = v
		}
	}
	return vs
}()

// DefaultSoftwareVersion is the client_software_version kraft sends when
// none is configured: "unknown", what Kafka's own clients send when they
// do not know theirs (AppInfoParser).
const DefaultSoftwareVersion = "unknown"

// TransportConfig configures a Transport.
type TransportConfig struct {
	// ID is the local replica's id; DirectoryID its directory id (zero:
	// none), by which it finds its place in an EndQuorumEpoch's preferred
	// candidates.
	ID          kraft.NodeID
	DirectoryID uuid.UUID
	// Listen is the address to accept connections on ("127.0.0.1:0": any
	// free port, see Addr).
	Listen string
	// Advertised is the host:port the other replicas reach this one at,
	// sent as this replica's CONTROLLER endpoint (BeginQuorumEpoch's and
	// EndQuorumEpoch's leader_endpoints, node_endpoints of responses that
	// name it the leader). Empty: the listener's address.
	Advertised string
	// ListenerName is the listener name the replica's endpoint is
	// advertised under and the other replicas' endpoints are taken by
	// (Kafka's first controller.listener.names; default ListenerName,
	// CONTROLLER). Kafka's replicas look their leader's endpoint up by
	// their own listener name and stop without it: every replica of a
	// quorum needs the same one.
	ListenerName string
	// Peers are the other replicas' host:port, for requests (Kafka's
	// controller.quorum.voters or bootstrap servers).
	Peers map[kraft.NodeID]string
	// Versions is what the transport advertises in its ApiVersions answers
	// and negotiates with (default TransportVersions). A narrower table
	// makes a replica of an older Kafka, for tests.
	Versions Versions
	// KRaftVersions is the kraft.version feature range advertised in
	// ApiVersions answers (default replica.SupportedKRaftVersions).
	KRaftVersions *kraft.VersionRange
	// SoftwareVersion is sent as ApiVersions' client_software_version
	// (default DefaultSoftwareVersion). Kafka answers ApiVersions v3+ with
	// INVALID_REQUEST unless the name and version match
	// ApiVersionsRequest.isValid's pattern: [a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?
	SoftwareVersion string
	// ClientID is the request header's client id (default "raft-client-ID",
	// as Kafka's KafkaRaftManager names its client).
	ClientID string

	DialTimeout         time.Duration
	ReconnectBackoff    time.Duration
	MaxReconnectBackoff time.Duration
	WriteTimeout        time.Duration
	QueueSize           int
	InboxSize           int

	// Describe, if set, answers DescribeQuorum requests (see
	// DescribeQuorumResponse); without it they are answered
	// NOT_LEADER_OR_FOLLOWER. It is called from a connection's goroutine.
	Describe func() (*kmsg.DescribeQuorumResponse, error)
	// Logf, if set, logs dropped messages and connection errors.
	Logf func(format string, args ...interface{})
	// NoPeerDown turns off the reports of PeerDowns.
	NoPeerDown bool
}

func (c TransportConfig) withDefaults() (TransportConfig, error) {
	if c.DialTimeout < 0 || c.ReconnectBackoff < 0 || c.MaxReconnectBackoff < 0 ||
		c.WriteTimeout < 0 || c.QueueSize < 0 || c.InboxSize < 0 {
		return c, errors.New("kafkawire: TransportConfig: negative timeout, backoff or size")
	}
	if c.Versions == nil {
		c.Versions = TransportVersions
	}
	if c.KRaftVersions == nil {
		kv := replica.SupportedKRaftVersions
		c.KRaftVersions = &kv
	}
	if c.ListenerName == "" {
		c.ListenerName = ListenerName
	}
	if c.SoftwareVersion == "" {
		c.SoftwareVersion = DefaultSoftwareVersion
	}
	if c.ClientID == "" {
		c.ClientID = fmt.Sprintf("raft-client-%d", c.ID)
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.ReconnectBackoff == 0 {
		c.ReconnectBackoff = DefaultReconnectBackoff
	}
	if c.MaxReconnectBackoff == 0 {
		c.MaxReconnectBackoff = DefaultMaxReconnectBackoff
	}
	if c.MaxReconnectBackoff < c.ReconnectBackoff {
		c.MaxReconnectBackoff = c.ReconnectBackoff
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.InboxSize == 0 {
		c.InboxSize = c.QueueSize
	}
	return c, nil
}

// Transport is a node.Transport in Kafka's wire protocol: what a KRaft
// controller's KafkaNetworkChannel and SocketServer exchange (docs/design.md
// D80).
//
// Outgoing: one connection per peer, dialed at the first request to it and
// again, with exponential backoff, after an error. The first request on a
// connection is ApiVersions (v4, again at the version the answer names if
// it is UNSUPPORTED_VERSION, KIP-511); each request then goes at the
// highest version of its API both sides support (Negotiate). Requests are
// pipelined; responses are matched to requests by correlation id.
//
// Incoming: every accepted connection is served; ApiVersions and
// DescribeQuorum are answered by the transport, the raft RPCs are decoded
// to kraft events for Inbox, and their responses go back on the request's
// connection with the request's correlation id and version.
//
// Correlation ids (D81): Kafka's are int32 and per connection; node.Message's
// Corr is a uint64 unique per sender. A request's Corr stays in the
// transport, keyed by the int32 correlation id the request went out with on
// its connection, and comes back on its response. An incoming request gets
// a Corr of the transport's own, a counter, under which the connection,
// correlation id, API and version wait for the response; a response whose
// Corr is not waiting (its connection closed) is dropped.
//
// Send never blocks: a message that cannot be sent now is dropped and the
// runtime's retries make up for it, as with node.TCPTransport.
//
// The connections, queues, backoff and peer-down reports are those of the
// connection layer node.TCPTransport shares (internal/stream,
// docs/design.md D220); Transport adds Kafka's frames, the ApiVersions
// handshake and the correlation ids.
type Transport struct {
	l     *stream.Layer[node.Message]
	cfg   TransportConfig
	self  Endpoint
	inbox chan node.Message
	once  sync.Once

	seq     atomic.Uint64 // Corr of incoming requests
	fetches fetchTracker  // for DescribeQuorum
	// voterChanges, if set, answers the KIP-853 voter changes
	// (ServeVoterChanges).
	voterChanges *voterChanges
	// calls are the voter-change requests the transport sent itself
	// (SendVoterRequest), waiting for their answer, by Corr.
	calls   map[uint64]chan VoterAnswer
	callSeq atomic.Uint64

	mu      sync.Mutex
	learned map[kraft.NodeID]bool // addresses learned from endpoints, not configured
	serving map[uint64]*served    // incoming requests waiting for their response
}

// kafkaWire is Transport as the connection layer's stream.Wire.
type kafkaWire Transport

var (
	_ node.Transport        = (*Transport)(nil)
	_ node.PeerDownReporter = (*Transport)(nil)
)

// PeerDowns delivers the ids of peers whose process is gone while their
// host is up: a connection to the peer's address was refused, when one to
// it ended or when one was to be made (node.TCPTransport.PeerDowns,
// docs/design.md D101).
func (t *Transport) PeerDowns() <-chan kraft.NodeID { return t.l.PeerDowns() }

// LogPeerDown logs a peer that refuses connections once after a
// connection to it ended, not at every failed reconnection, which the
// drops already log (at their 1st, 2nd, 4th... occurrence).
func (w *kafkaWire) LogPeerDown(id kraft.NodeID, addr string, afterConn bool) {
	if afterConn {
		(*Transport)(w).logf("node %d refuses connections at %s: its process is gone", id, addr)
	}
}

// LogUnreachable and LogConnected log nothing: the drops of an
// unreachable peer's requests are logged.
func (w *kafkaWire) LogUnreachable(kraft.NodeID, string, error, int, time.Time) {}
func (w *kafkaWire) LogConnected(kraft.NodeID, string, int, time.Time)          {}

// LogDrop logs a dropped message to Logf.
func (w *kafkaWire) LogDrop(n uint64, _ bool, msg string) {
	if w.cfg.Logf != nil {
		w.cfg.Logf("kafka transport %d: dropped a message (%d so far): %s", w.cfg.ID, n, msg)
	}
}

// conn is Kafka's side of one connection: outgoing (to a peer: pending
// requests) or incoming (the high watermark sent on it). It is the
// stream.Conn's Data.
type conn struct {
	*stream.Conn

	// Outgoing connections: the negotiated versions and the requests
	// waiting for a response, by correlation id.
	mu         sync.Mutex
	negotiated map[int16]int16
	nextCorr   int32
	pending    map[int32]pendingRequest

	// Incoming connections: the high watermark last sent in a Fetch
	// response on this connection (the follower's, as far as the leader
	// knows, for Fetch below v18, which does not carry it); -1 before.
	hwm atomic.Int64
}

// maxPending bounds the requests waiting for a response on one connection.
const maxPending = 4096

type pendingRequest struct {
	corr    uint64
	api     int16
	version int16
}

// served is an incoming request waiting for the runtime's response.
type served struct {
	c       *conn
	corr    int32
	api     int16
	version int16
	at      time.Time // when it arrived
}

func newConn(sc *stream.Conn) *conn {
	c := &conn{Conn: sc, pending: map[int32]pendingRequest{}}
	c.hwm.Store(-1)
	sc.Data = c
	return c
}

// NewTransport listens on cfg.Listen and returns the transport.
func NewTransport(cfg TransportConfig) (*Transport, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l, err := stream.Listen[node.Message](stream.Config{
		Listen: cfg.Listen, Peers: cfg.Peers,
		DialTimeout: cfg.DialTimeout, ReconnectBackoff: cfg.ReconnectBackoff, MaxReconnectBackoff: cfg.MaxReconnectBackoff,
		WriteTimeout: cfg.WriteTimeout, QueueSize: cfg.QueueSize, NoPeerDown: cfg.NoPeerDown,
	})
	if err != nil {
		return nil, fmt.Errorf("kafkawire: listen: %w", err)
	}
	adv := cfg.Advertised
	if adv == "" {
		adv = l.Addr().String()
	}
	self, err := ParseEndpoint(cfg.ID, adv)
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	self.Name = cfg.ListenerName
	t := &Transport{
		l: l, cfg: cfg, self: self,
		inbox:   make(chan node.Message, cfg.InboxSize),
		learned: map[kraft.NodeID]bool{},
		serving: map[uint64]*served{},
		calls:   map[uint64]chan VoterAnswer{},
	}
	l.Start((*kafkaWire)(t))
	return t, nil
}

// ParseEndpoint reads host:port as node id's endpoint under the listener
// name CONTROLLER.
func ParseEndpoint(id kraft.NodeID, hostport string) (Endpoint, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return Endpoint{}, fmt.Errorf("kafkawire: endpoint %q: %w", hostport, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return Endpoint{}, fmt.Errorf("kafkawire: endpoint %q: bad port", hostport)
	}
	return Endpoint{NodeID: id, Name: ListenerName, Host: host, Port: uint16(p)}, nil
}

// Format is Kafka's encoding of records under the transport's listener
// name, with which it sends and reads Fetch responses' VotersRecords; a
// runtime's snapshots in Kafka's format take the same (docs/design.md
// D310).
func (t *Transport) Format() Format { return Format{ListenerName: t.cfg.ListenerName} }

// Addr is the address the transport listens on.
func (t *Transport) Addr() net.Addr { return t.l.Addr() }

// Endpoint is the local replica's advertised endpoint.
func (t *Transport) Endpoint() Endpoint { return t.self }

// Inbox delivers the requests and responses that arrived.
func (t *Transport) Inbox() <-chan node.Message { return t.inbox }

// Dropped counts the messages the transport dropped (node.DropCounter).
func (t *Transport) Dropped() uint64 { return t.l.Dropped() }

// drop counts a dropped message and logs it if always, or at the 1st,
// 2nd, 4th... drop.
func (t *Transport) drop(always bool, format string, args ...interface{}) {
	t.l.Drop(always, format, args...)
}

func (t *Transport) logf(format string, args ...interface{}) {
	if t.cfg.Logf != nil {
		t.cfg.Logf("kafka transport %d: "+format, append([]interface{}{t.cfg.ID}, args...)...)
	}
}

// SetPeer sets the address of peer id (the runtime's voter set changed);
// an empty addr forgets it. A connection to the old address is closed.
func (t *Transport) SetPeer(id kraft.NodeID, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.l.SetPeer(id, addr)
	delete(t.learned, id)
}

// learn keeps endpoints a message carried for replicas without a
// configured address (an observer learns its leader's this way, as
// Kafka's followers do from leader_endpoints and node_endpoints).
func (t *Transport) learn(eps []Endpoint) {
	if len(eps) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ep := range eps {
		if ep.NodeID == t.cfg.ID || ep.Host == "" || (ep.Name != "" && ep.Name != t.cfg.ListenerName) {
			continue
		}
		if _, ok := t.l.PeerAddr(ep.NodeID); ok && !t.learned[ep.NodeID] {
			continue
		}
		t.l.SetPeer(ep.NodeID, net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))))
		t.learned[ep.NodeID] = true
	}
}

// endpointOf is node id's CONTROLLER endpoint, if known.
func (t *Transport) endpointOf(id kraft.NodeID) []Endpoint {
	if id == t.cfg.ID {
		return []Endpoint{t.self}
	}
	if id < 0 {
		return nil
	}
	addr, ok := t.l.PeerAddr(id)
	if !ok {
		return nil
	}
	ep, err := ParseEndpoint(id, addr)
	if err != nil {
		return nil
	}
	ep.Name = t.cfg.ListenerName
	return []Endpoint{ep}
}

// Send sends m: a request on the connection to m.To, a response on the
// connection its request came on. It never blocks.
func (t *Transport) Send(m node.Message) {
	if m.To == t.cfg.ID {
		t.drop(false, "a message to the local id %d", m.To)
		return
	}
	if m.Response {
		t.sendResponse(m)
		return
	}
	switch err := t.l.Send(m.To, m); err {
	case nil:
	case stream.ErrQueueFull:
		t.drop(false, "the queue for %d is full", m.To)
	default:
		t.drop(false, "no address for %d: %v", m.To, err)
	}
}

// sendResponse encodes a response at its request's version (before Send
// returns: its records may be the log's memory) and queues it for the
// request's connection.
func (t *Transport) sendResponse(m node.Message) {
	t.mu.Lock()
	s := t.serving[m.Corr]
	delete(t.serving, m.Corr)
	t.mu.Unlock()
	if s == nil {
		t.drop(false, "response %d to %d: its request's connection is gone", m.Corr, m.To)
		return
	}
	msg := Msg{Event: m.Event, API: s.api, Records: m.Records, RecordTimestamp: time.Now().UnixMilli(), LogStartOffset: -1, Chunk: m.Chunk}
	msg.Endpoints = t.responseEndpoints(m.Event)
	resp, err := t.Format().EncodeResponse(msg, s.version)
	if err != nil {
		t.drop(true, "%s response to %d not encoded: %v", kmsg.NameForKey(s.api), m.To, err)
		return
	}
	if f, ok := m.Event.(kraft.ReceiveFetchResponse); ok && f.Error == kraft.ErrNone {
		s.c.hwm.Store(f.HighWatermark)
		if len(m.Records) == 0 && f.Diverging == nil && f.Snapshot == nil {
			t.fetches.caughtUp(m.To, s.at)
		}
	}
	switch err := s.c.Queue(AppendResponse(nil, s.corr, resp)); err {
	case nil:
	case stream.ErrConnGone:
		t.drop(false, "response to %d: connection closed", m.To)
	default:
		t.drop(false, "the response queue of the connection from %d is full", m.To)
	}
}

// responseEndpoints are the node_endpoints of a response: the leader's it
// names, if known (Kafka's KafkaRaftClient adds the leader's endpoint).
func (t *Transport) responseEndpoints(ev kraft.Event) []Endpoint {
	leader := kraft.NoNode
	if h, ok := kraft.MessageHeader(ev); ok {
		leader = h.LeaderID // NoNode for a request (D280)
	}
	return t.endpointOf(leader)
}

// Close closes the listener and every connection, waits for the
// transport's goroutines and closes Inbox.
func (t *Transport) Close() error {
	var err error
	t.once.Do(func() {
		err = t.l.Close()
		close(t.inbox)
	})
	return err
}

// Closed drops the requests waiting for a response on c.
func (w *kafkaWire) Closed(sc *stream.Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, s := range w.serving {
		if s.c.Conn == sc {
			delete(w.serving, k)
		}
	}
}

func (t *Transport) deliver(m node.Message) bool {
	select {
	case t.inbox <- m:
		return true
	case <-t.l.Done():
		return false
	}
}

// ---- the server side ----

// answer queues a response the transport makes itself.
func (t *Transport) answer(c *conn, corr int32, r kmsg.Response) {
	c.Put(AppendResponse(nil, corr, r))
}

// Serve reads the requests of an accepted connection: ApiVersions and
// DescribeQuorum are answered here, raft requests go to Inbox. Any other
// API, or a version the transport does not support, closes the
// connection, as Kafka's SocketServer does.
func (w *kafkaWire) Serve(sc *stream.Conn, r *bufio.Reader) {
	t := (*Transport)(w)
	c := newConn(sc)
	local := kraft.ReplicaKey{ID: t.cfg.ID, DirectoryID: t.cfg.DirectoryID}
	for {
		frame, err := ReadFrame(r, 0)
		if err != nil {
			return
		}
		h, req, err := ReadRequest(frame)
		var uv *UnsupportedVersionError
		if errors.As(err, &uv) && h.APIKey == APIVersions {
			t.answer(c, h.CorrelationID, apiVersionsAnswer(t.served(), h.APIVersion, t.cfg.KRaftVersions))
			continue
		}
		if err != nil {
			t.drop(true, "request from %v: %v", c.RemoteAddr(), err)
			return
		}
		if vr, ok := t.served()[h.APIKey]; !ok || h.APIVersion < vr.Min || h.APIVersion > vr.Max {
			if h.APIKey == APIVersions {
				t.answer(c, h.CorrelationID, apiVersionsAnswer(t.served(), h.APIVersion, t.cfg.KRaftVersions))
				continue
			}
			t.drop(true, "request from %v: %s v%d is not supported", c.RemoteAddr(), kmsg.NameForKey(h.APIKey), h.APIVersion)
			return
		}
		switch q := req.(type) {
		case *kmsg.ApiVersionsRequest:
			t.answer(c, h.CorrelationID, apiVersionsAnswer(t.served(), h.APIVersion, t.cfg.KRaftVersions))
			continue
		case *kmsg.DescribeQuorumRequest:
			t.answer(c, h.CorrelationID, t.describe(q))
			continue
		case *kmsg.AddRaftVoterRequest, *kmsg.RemoveRaftVoterRequest, *kmsg.UpdateRaftVoterRequest:
			t.mu.Lock()
			serving := t.voterChanges != nil
			t.mu.Unlock()
			if serving {
				// Answered once the change commits: off this reader.
				corr := h.CorrelationID
				t.l.Go(func() { t.voterChange(c, corr, req) })
				continue
			}
			t.drop(true, "request from %v: %s without ServeVoterChanges", c.RemoteAddr(), kmsg.NameForKey(h.APIKey))
			return
		}
		m, err := DecodeRequest(req, local)
		if err != nil {
			if resp := refusal(req, err); resp != nil {
				t.answer(c, h.CorrelationID, resp)
				continue
			}
			t.drop(true, "request from %v: %v", c.RemoteAddr(), err)
			return
		}
		t.learn(m.Endpoints)
		corr := t.seq.Add(1)
		t.mu.Lock()
		if c.IsShut() {
			t.mu.Unlock()
			return
		}
		now := time.Now()
		t.serving[corr] = &served{c: c, corr: h.CorrelationID, api: h.APIKey, version: h.APIVersion, at: now}
		t.mu.Unlock()
		msg := node.Message{From: fromOf(m.Event), To: t.cfg.ID, Corr: corr, Event: m.Event}
		if f, ok := m.Event.(kraft.ReceiveFetch); ok {
			// Fetch below v18 has no high watermark (docs/design.md D81).
			msg.HighWatermark = c.hwm.Load()
			t.fetches.fetched(f.From, f.FetchOffset, now)
		}
		if !t.deliver(msg) {
			return
		}
	}
}

// fromOf is the requester a request event names (its header, D280).
func fromOf(ev kraft.Event) kraft.NodeID {
	if h, ok := kraft.MessageHeader(ev); ok && !h.Response {
		return h.From
	}
	return kraft.NoNode
}

// refusal is the answer to a request the transport refuses without
// stepping it (docs/wire-mapping.md): a cluster id that is not a Kafka
// Uuid gets INCONSISTENT_CLUSTER_ID; another partition INVALID_REQUEST, or
// UNKNOWN_TOPIC_OR_PARTITION for FetchSnapshot. Nil: close the connection.
func refusal(req kmsg.Request, err error) kmsg.Response {
	var code kraft.ErrorCode
	switch {
	case errors.Is(err, ErrInvalidClusterID):
		code = kraft.ErrInconsistentClusterID
	case errors.Is(err, ErrNotMetadataPartition):
		code = kraft.ErrInvalidRequest
		if req.Key() == FetchSnapshot {
			code = kraft.ErrUnknownTopicOrPartition
		}
	default:
		return nil
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		r.ErrorCode = int16(code)
	case *kmsg.BeginQuorumEpochResponse:
		r.ErrorCode = int16(code)
	case *kmsg.EndQuorumEpochResponse:
		r.ErrorCode = int16(code)
	case *kmsg.FetchResponse:
		r.ErrorCode = int16(code)
	case *kmsg.FetchSnapshotResponse:
		r.ErrorCode = int16(code)
	default:
		return nil
	}
	return resp
}

// describe answers a DescribeQuorum request.
func (t *Transport) describe(q *kmsg.DescribeQuorumRequest) kmsg.Response {
	var r *kmsg.DescribeQuorumResponse
	t.mu.Lock()
	describe := t.cfg.Describe
	t.mu.Unlock()
	if describe != nil {
		var err error
		if r, err = describe(); err != nil {
			r = nil
		}
	}
	if r == nil {
		r = notLeaderDescribe()
	}
	r.Version = q.Version
	return r
}

// ---- the client side ----

// Encode encodes request m for connection c (request).
func (w *kafkaWire) Encode(to kraft.NodeID, sc *stream.Conn, m node.Message) []byte {
	return (*Transport)(w).request(to, sc.Data.(*conn), m)
}

// request encodes request m for connection c at the negotiated version and
// registers it as pending; nil if it is not sent (then it was dropped or
// answered locally).
func (t *Transport) request(to kraft.NodeID, c *conn, m node.Message) []byte {
	api, ok := apiOf(m)
	if !ok {
		t.drop(true, "request %T to %d has no Kafka mapping", m.Event, to)
		return nil
	}
	c.mu.Lock()
	version, ok := c.negotiated[api]
	c.mu.Unlock()
	var req kmsg.Request
	var err error
	if !ok {
		err = fmt.Errorf("%w: %d does not support %s", ErrNotRepresentable, to, kmsg.NameForKey(api))
	} else if api == APIVersions {
		req = APIVersionsRequest(version, t.cfg.SoftwareVersion)
	} else {
		msg := Msg{Event: m.Event, MaxWaitMs: 500, MaxBytes: replica.DefaultFetchMaxBytes}
		switch e := m.Event.(type) {
		case kraft.ReceiveAddVoter, kraft.ReceiveUpdateVoter:
			// The replica's own listener (Kafka: localListeners), D170.
			msg.Endpoints, msg.TimeoutMs = []Endpoint{t.self}, VoterRequestTimeoutMs
		case kraft.ReceiveBeginQuorumEpoch, kraft.ReceiveEndQuorumEpoch:
			msg.Endpoints = []Endpoint{t.self}
			if e, ok := e.(kraft.ReceiveEndQuorumEpoch); ok {
				msg.Preferred = PreferredFor(e.SuccessorRank, to, e.LeaderID)
			}
		case kraft.ReceiveFetchSnapshot:
			msg.MaxBytes = replica.DefaultSnapshotChunkBytes
		}
		req, err = EncodeRequest(msg, version)
	}
	if err != nil {
		// A pre-vote to a voter without Vote v2 (KIP-996): Kafka's client
		// answers it UNSUPPORTED_VERSION without touching the wire, and a
		// Prospective becomes Candidate.
		if v, isVote := m.Event.(kraft.ReceiveVoteRequest); isVote && errors.Is(err, ErrNotRepresentable) {
			t.deliver(node.Message{From: to, To: t.cfg.ID, Corr: m.Corr, Response: true, Event: kraft.ReceiveVoteResponse{
				From: to, Error: kraft.ErrUnsupportedVersion, Epoch: v.CandidateEpoch, LeaderID: kraft.NoNode,
			}})
			return nil
		}
		if isVoterRequest(m.Event) && errors.Is(err, ErrNotRepresentable) {
			// A leader without the API: Kafka's NetworkClient answers
			// UNSUPPORTED_VERSION locally.
			t.voterAnswer(to, m.Corr, VoterAnswer{API: api, Code: kraft.ErrUnsupportedVersion, LeaderID: kraft.NoNode, LeaderEpoch: -1})
			return nil
		}
		t.drop(true, "request to %d not encoded: %v", to, err)
		return nil
	}
	c.mu.Lock()
	corr := c.nextCorr
	c.nextCorr++
	c.pending[corr] = pendingRequest{corr: m.Corr, api: api, version: version}
	// A request still unanswered maxPending requests later will not be
	// (Kafka's servers answer a connection's requests in order; the
	// runtime has sent it again long since): forget it.
	delete(c.pending, corr-maxPending)
	c.mu.Unlock()
	return AppendRequest(nil, corr, &t.cfg.ClientID, req)
}

// apiOf is the API of a request message: ApiVersions, or the API key
// of the request event's row in kraft's catalogue (D230, D280).
func apiOf(m node.Message) (int16, bool) {
	if m.APIVersions {
		return APIVersions, true
	}
	if h, ok := kraft.MessageHeader(m.Event); ok && !h.Response && h.APIKey >= 0 {
		return h.APIKey, true
	}
	return 0, false
}

// Handshake exchanges ApiVersions on a connection just dialed to peer.
func (w *kafkaWire) Handshake(peer kraft.NodeID, sc *stream.Conn, _ *bufio.Writer) error {
	c := newConn(sc)
	neg, err := (*Transport)(w).handshake(c)
	if err != nil {
		return fmt.Errorf("ApiVersions with %d at %v: %w", peer, sc.RemoteAddr(), err)
	}
	c.negotiated = neg
	return nil
}

// handshake sends ApiVersions (at the newest version, then at the one an
// UNSUPPORTED_VERSION answer names) and returns the negotiated versions.
func (t *Transport) handshake(c *conn) (map[int16]int16, error) {
	_ = c.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	defer c.SetDeadline(time.Time{})
	version := t.cfg.Versions[APIVersions].Max
	for try := 0; try < 2; try++ {
		corr := c.nextCorr
		c.nextCorr++
		if _, err := c.Write(AppendRequest(nil, corr, &t.cfg.ClientID, APIVersionsRequest(version, t.cfg.SoftwareVersion))); err != nil {
			return nil, err
		}
		frame, err := ReadFrame(c.Conn, 0)
		if err != nil {
			return nil, err
		}
		got, resp, err := ReadResponse(frame, APIVersions, version)
		if err != nil {
			return nil, err
		}
		if got != corr {
			return nil, fmt.Errorf("correlation id %d, expected %d", got, corr)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		v, retry, err := APIVersionsRetry(av)
		if err != nil {
			return nil, err
		}
		if retry {
			version = v
			continue
		}
		if av.ErrorCode != 0 {
			return nil, fmt.Errorf("error %v", kraft.ErrorCode(av.ErrorCode))
		}
		return Negotiate(t.sends(), VersionsOf(av)), nil
	}
	return nil, errors.New("ApiVersions retried without success")
}

// ReadResponses reads the responses of an outgoing connection and
// delivers them as kraft events.
func (w *kafkaWire) ReadResponses(from kraft.NodeID, sc *stream.Conn, r *bufio.Reader) {
	t := (*Transport)(w)
	c := sc.Data.(*conn)
	for {
		frame, err := ReadFrame(r, 0)
		if err != nil {
			return
		}
		corr, err := ResponseCorrelationID(frame)
		if err != nil {
			return
		}
		c.mu.Lock()
		p, ok := c.pending[corr]
		delete(c.pending, corr)
		c.mu.Unlock()
		if !ok {
			t.drop(true, "response from %d with unknown correlation id %d", from, corr)
			return
		}
		_, resp, err := ReadResponse(frame, p.api, p.version)
		if err != nil {
			t.drop(true, "response from %d: %v", from, err)
			return
		}
		m := node.Message{From: from, To: t.cfg.ID, Corr: p.corr, Response: true}
		if p.api == AddRaftVoter || p.api == RemoveRaftVoter || p.api == UpdateRaftVoter {
			a, err := DecodeVoterAnswer(resp)
			if err != nil {
				t.drop(true, "response from %d: %v", from, err)
				continue
			}
			t.voterAnswer(from, p.corr, a)
			continue
		}
		if av, ok := resp.(*kmsg.ApiVersionsResponse); ok {
			m.APIVersions = true
			m.Event = kraft.ReceiveAPIVersionsResponse{From: from, Error: kraft.ErrorCode(av.ErrorCode), KRaftVersions: KRaftVersionsOf(av)}
		} else {
			msg, err := t.Format().DecodeResponse(resp, from)
			var tle *TopLevelError
			if errors.As(err, &tle) {
				// Not stepped: the runtime's request timeout retries it
				// (Kafka's handleTopLevelError backs off and retries).
				t.drop(false, "%v from %d", err, from)
				continue
			}
			if err != nil {
				t.drop(true, "response from %d: %v", from, err)
				continue
			}
			t.learn(msg.Endpoints)
			m.Event, m.Records, m.Chunk = msg.Event, msg.Records, msg.Chunk
		}
		if !t.deliver(m) {
			return
		}
	}
}
