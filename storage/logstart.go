package storage

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kraftquorum/kraft"
)

// LogStartFileName is the file in a log's directory that records the log
// start once it is above offset 0 (Kafka keeps the log start offset in a
// log-start-offset-checkpoint file too). Its content is three lines, the
// format version 1, the start offset and the epoch of the record before
// it, in decimal, and the CRC-32C (Castagnoli) of the second line (without
// its newline) in 8 lower-case hexadecimal digits:
//
//	1
//	1500 7
//	8539d9c8
//
// so that a flipped digit, which would still parse, is damage, not a
// different log start. Version 0, the same without the checksum line, is
// read too (files written before version 1).
//
// It is replaced atomically (written to LogStartFileName+".tmp", fsynced,
// renamed, the directory fsynced). An absent file means the log starts at
// offset 0.
const LogStartFileName = "log-start-offset-checkpoint"

// maxLogStartFile bounds what readLogStart reads.
const maxLogStartFile = 64

func encodeLogStart(start kraft.LogEnd) []byte {
	line := fmt.Sprintf("%d %d", start.Offset, start.Epoch)
	return []byte(fmt.Sprintf("1\n%s\n%08x\n", line, crc32.Checksum([]byte(line), castagnoli)))
}

// parseLogStart decodes the content of a log start file. Anything but
// exactly what encodeLogStart writes, or a version 0 file, is an error.
func parseLogStart(b []byte) (kraft.LogEnd, error) {
	lines := bytes.Split(b, []byte("\n"))
	switch {
	case len(lines) == 3 && string(lines[0]) == "0" && len(lines[2]) == 0:
	case len(lines) == 4 && string(lines[0]) == "1" && len(lines[3]) == 0:
		if want := fmt.Sprintf("%08x", crc32.Checksum(lines[1], castagnoli)); string(lines[2]) != want {
			return kraft.LogEnd{}, fmt.Errorf("checksum %q where %q belongs", lines[2], want)
		}
	default:
		return kraft.LogEnd{}, errors.New("not version 0 or 1 and one line of offset and epoch")
	}
	fields := bytes.Split(lines[1], []byte(" "))
	if len(fields) != 2 {
		return kraft.LogEnd{}, errors.New("not an offset and an epoch")
	}
	offset, err := parseDecimal(fields[0], 63)
	if err != nil {
		return kraft.LogEnd{}, fmt.Errorf("offset: %w", err)
	}
	epoch, err := parseDecimal(fields[1], 31)
	if err != nil {
		return kraft.LogEnd{}, fmt.Errorf("epoch: %w", err)
	}
	return kraft.LogEnd{Offset: offset, Epoch: kraft.Epoch(epoch)}, nil
}

// parseDecimal parses a non-negative decimal integer below 2^bits, written
// without sign or leading zeros.
func parseDecimal(b []byte, bits int) (int64, error) {
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return 0, fmt.Errorf("%q is not a canonical decimal", b)
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a decimal", b)
		}
	}
	n, err := strconv.ParseInt(string(b), 10, bits+1)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// readLogStart reads the log start of the log in dir: offset 0 and epoch
// 0 when there is no file, and an ErrCorrupt error when the file does not
// parse.
func readLogStart(fsys FS, dir string) (kraft.LogEnd, error) {
	path := filepath.Join(dir, LogStartFileName)
	b, err := readSmallFile(fsys, path, maxLogStartFile)
	if errors.Is(err, os.ErrNotExist) {
		return kraft.LogEnd{}, nil
	}
	if err != nil {
		return kraft.LogEnd{}, fmt.Errorf("storage: reading %s: %w", path, err)
	}
	start, err := parseLogStart(b)
	if err != nil {
		return kraft.LogEnd{}, &fileDamageError{fmt.Sprintf("storage: log start checkpoint %s is damaged (%s): "+
			"the log cannot tell which of its records were deleted; restore the directory, or replace the replica's data directory and let it fetch the log again", path, err)}
	}
	return start, nil
}

// writeLogStart durably records start as the log start of the log in dir.
func writeLogStart(fsys FS, dir string, start kraft.LogEnd) error {
	return writeFileAtomic(fsys, filepath.Join(dir, LogStartFileName), encodeLogStart(start))
}
