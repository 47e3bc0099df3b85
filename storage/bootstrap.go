package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// The bootstrap checkpoint holds the voter set a dynamic quorum starts with
// (KIP-853; Kafka's kafka-storage format --initial-controllers writes it as
// the snapshot 00000000000000000000-0000000000.checkpoint). kraft keeps it
// as the voter set at offset -1 (kraft.VoterSetAt). The store keeps the
// host's encoding of the set as opaque bytes, checksummed:
//
//	0  4  magic "KRBS"
//	4  4  payload length N (uint32, big-endian)
//	8  4  CRC-32C of the payload
//	12 N  payload
//
// It is written once, atomically and durably, before the replica first
// starts, and only read afterwards.

// BootstrapFileName is the name of the bootstrap checkpoint in a data
// directory.
const BootstrapFileName = "bootstrap.checkpoint"

const (
	bootstrapMagic      = "KRBS"
	bootstrapHeaderSize = 12
	maxBootstrapSize    = 1 << 20
)

// BootstrapPath is the path of the bootstrap checkpoint in dir.
func BootstrapPath(dir string) string { return filepath.Join(dir, BootstrapFileName) }

// ReadBootstrap reads the bootstrap checkpoint at path and returns its
// payload; a missing file gives (nil, nil). A file that is not what
// WriteBootstrap wrote is an ErrCorrupt error naming it.
func ReadBootstrap(path string) ([]byte, error) { return readBootstrap(osFS{}, path) }

func readBootstrap(fsys FS, path string) ([]byte, error) {
	b, err := readSmallFile(fsys, path, maxBootstrapSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: reading bootstrap checkpoint %s: %w", path, err)
	}
	if len(b) < bootstrapHeaderSize || string(b[:4]) != bootstrapMagic ||
		int64(binary.BigEndian.Uint32(b[4:8])) != int64(len(b)-bootstrapHeaderSize) ||
		binary.BigEndian.Uint32(b[8:12]) != crc32.Checksum(b[bootstrapHeaderSize:], castagnoli) {
		return nil, fmt.Errorf("%w: bootstrap checkpoint %s", ErrCorrupt, path)
	}
	return b[bootstrapHeaderSize:], nil
}

// WriteBootstrap stores payload as the bootstrap checkpoint at path,
// atomically and durably (a temporary file, fsynced, renamed over path, and
// the directory fsynced).
func WriteBootstrap(path string, payload []byte) error { return writeBootstrap(osFS{}, path, payload) }

func writeBootstrap(fsys FS, path string, payload []byte) error {
	if len(payload) > maxBootstrapSize-bootstrapHeaderSize {
		return fmt.Errorf("storage: bootstrap checkpoint of %d bytes is too large", len(payload))
	}
	b := make([]byte, bootstrapHeaderSize, bootstrapHeaderSize+len(payload))
	copy(b, bootstrapMagic)
	binary.BigEndian.PutUint32(b[4:8], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[8:12], crc32.Checksum(payload, castagnoli))
	b = append(b, payload...)
	if err := writeFileAtomic(fsys, path, b); err != nil {
		return fmt.Errorf("storage: writing bootstrap checkpoint %s: %w", path, err)
	}
	return nil
}
