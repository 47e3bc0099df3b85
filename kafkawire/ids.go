package kafkawire

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// The metadata partition, __cluster_metadata-0 (Kafka's
// Topic.CLUSTER_METADATA_TOPIC_NAME and CLUSTER_METADATA_TOPIC_PARTITION).
// Fetch v13+ names it by topic id, Kafka's fixed Uuid.METADATA_TOPIC_ID
// (Uuid(0, 1), "AAAAAAAAAAAAAAAAAAAAAQ").
const (
	MetadataTopic     = "__cluster_metadata"
	MetadataPartition = 0
)

// MetadataTopicID is Kafka's Uuid.METADATA_TOPIC_ID.
var MetadataTopicID = [16]byte{15: 1}

// ListenerName is the listener name kraft advertises its endpoints under
// and looks a leader's endpoint up by: Kafka's default controller listener
// name, CONTROLLER (controller.listener.names).
const ListenerName = "CONTROLLER"

// ErrInvalidClusterID is returned when a message's cluster_id is not a
// Kafka Uuid string. Such a request cannot match the local cluster id: a
// host answers it with a top-level INCONSISTENT_CLUSTER_ID without stepping
// it (docs/wire-mapping.md).
var ErrInvalidClusterID = errors.New("kafkawire: cluster id is not a Kafka Uuid")

// ClusterIDString is a cluster id as Kafka writes it (Uuid.toString: the 16
// bytes in URL-safe base64 without padding, 22 characters), or nil for an
// unset one (a null cluster_id).
func ClusterIDString(id uuid.NullUUID) *string {
	if !id.Valid {
		return nil
	}
	s := base64.RawURLEncoding.EncodeToString(id.UUID[:])
	return &s
}

// ParseClusterID reads a cluster_id: nil is unset, anything else must be a
// Kafka Uuid string (Uuid.fromString: URL-safe base64 of 16 bytes; Kafka's
// decoder also takes the padded form).
func ParseClusterID(s *string) (uuid.NullUUID, error) {
	if s == nil {
		return uuid.NullUUID{}, nil
	}
	u, err := ParseUuid(*s)
	if err != nil {
		return uuid.NullUUID{}, fmt.Errorf("%w: %q", ErrInvalidClusterID, *s)
	}
	return uuid.NullUUID{UUID: u, Valid: true}, nil
}

// ParseUuid reads a Kafka Uuid string (directory ids and topic ids print
// this way too).
func ParseUuid(s string) (uuid.UUID, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.URLEncoding.DecodeString(s)
	}
	if err != nil || len(b) != 16 {
		return uuid.Nil, fmt.Errorf("kafkawire: %q is not a Kafka Uuid", s)
	}
	return uuid.UUID(b), nil
}

// UuidString is a Kafka Uuid's string form (Uuid.toString).
func UuidString(u uuid.UUID) string { return base64.RawURLEncoding.EncodeToString(u[:]) }
