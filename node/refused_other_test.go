//go:build !unix

package node

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// refusedAddr returns a loopback address nothing listens on (a port
// listened on and closed again: another program may take it meanwhile).
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
