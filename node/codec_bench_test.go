package node

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkCodecEncode encodes one message of each message event
// (codecFullEvents, without records: the event's own encoding) per
// operation.
func BenchmarkCodecEncode(b *testing.B) {
	var msgs []Message
	for _, e := range codecFullEvents() {
		m := codecFullMessage(e)
		m.Records = nil
		msgs = append(msgs, m)
	}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, m := range msgs {
			var err error
			if buf, err = appendMessage(buf[:0], m); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCodecDecode decodes one message of each message event per
// operation, as the transport does (decodeShared).
func BenchmarkCodecDecode(b *testing.B) {
	var frames [][]byte
	for _, e := range codecFullEvents() {
		m := codecFullMessage(e)
		m.Records = nil
		p, err := EncodeMessage(m)
		require.NoError(b, err)
		frames = append(frames, p)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range frames {
			if _, err := decodeShared(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}
