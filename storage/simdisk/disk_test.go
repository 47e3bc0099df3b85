package simdisk

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func create(t *testing.T, d *Disk, path string, data []byte) *file {
	t.Helper()
	f, err := d.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	if data != nil {
		_, err = f.WriteAt(data, 0)
		require.NoError(t, err)
	}
	return f.(*file)
}

func read(t *testing.T, d *Disk, path string) ([]byte, bool) {
	t.Helper()
	b, err := d.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	require.NoError(t, err)
	return b, true
}

func TestSyncedFileWithSyncedNameSurvivesPowerLoss(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		d := New(seed)
		require.NoError(t, d.MkdirAll("/r/log"))
		require.NoError(t, d.SyncDir("/"))
		require.NoError(t, d.SyncDir("/r"))
		f := create(t, d, "/r/log/a", []byte("hello"))
		require.NoError(t, f.Sync())
		require.NoError(t, d.SyncDir("/r/log"))
		d.Crash()
		d.Restart()
		b, ok := read(t, d, "/r/log/a")
		require.True(t, ok, "seed %d", seed)
		require.Equal(t, "hello", string(b))
	}
}

// A file's data and its name are durable apart (ALICE): fsyncing the file
// does not make its directory entry durable.
func TestNameNotSyncedMayBeLost(t *testing.T) {
	kept, lost := 0, 0
	for seed := int64(0); seed < 100; seed++ {
		d := New(seed)
		f := create(t, d, "/a", []byte("x"))
		require.NoError(t, f.Sync())
		d.Crash()
		d.Restart()
		if _, ok := read(t, d, "/a"); ok {
			kept++
		} else {
			lost++
		}
	}
	require.Positive(t, kept)
	require.Positive(t, lost)
}

func TestUnsyncedWritesMayBeLostSyncedNever(t *testing.T) {
	outcomes := map[string]bool{}
	for seed := int64(0); seed < 200; seed++ {
		d := New(seed)
		f := create(t, d, "/a", []byte("aaaa"))
		require.NoError(t, f.Sync())
		require.NoError(t, d.SyncDir("/"))
		_, err := f.WriteAt([]byte("bbbb"), 4)
		require.NoError(t, err)
		d.Crash()
		d.Restart()
		b, ok := read(t, d, "/a")
		require.True(t, ok)
		require.Equal(t, "aaaa", string(b[:4]), "synced bytes survive, seed %d", seed)
		outcomes[string(b)] = true
	}
	require.True(t, outcomes["aaaa"], "the unsynced write may be lost")
	require.True(t, outcomes["aaaabbbb"], "or kept")
}

// A write torn by a power loss keeps each of its sectors whole or not at
// all.
func TestTornWriteKeepsWholeSectors(t *testing.T) {
	old := make([]byte, 4*SectorSize)
	for i := range old {
		old[i] = 'o'
	}
	nw := make([]byte, 4*SectorSize)
	for i := range nw {
		nw[i] = 'n'
	}
	torn := false
	for seed := int64(0); seed < 200; seed++ {
		d := New(seed)
		f := create(t, d, "/a", old)
		require.NoError(t, f.Sync())
		require.NoError(t, d.SyncDir("/"))
		_, err := f.WriteAt(nw, 0)
		require.NoError(t, err)
		d.Crash()
		d.Restart()
		b, _ := read(t, d, "/a")
		require.Len(t, b, len(old))
		mixed := false
		for s := 0; s < 4; s++ {
			sec := string(b[s*SectorSize : (s+1)*SectorSize])
			require.Contains(t, []string{string(old[:SectorSize]), string(nw[:SectorSize])}, sec, "seed %d sector %d", seed, s)
			if sec != string(b[:SectorSize]) {
				mixed = true
			}
		}
		torn = torn || mixed
	}
	require.True(t, torn, "some crash tears the write between sectors")
}

// A rename is atomic: after a power loss the file is under one name.
func TestRenameKeepsOneName(t *testing.T) {
	both := map[string]bool{}
	for seed := int64(0); seed < 100; seed++ {
		d := New(seed)
		require.NoError(t, d.MkdirAll("/x"))
		require.NoError(t, d.SyncDir("/"))
		f := create(t, d, "/x/old", []byte("v"))
		require.NoError(t, f.Sync())
		require.NoError(t, d.SyncDir("/x"))
		require.NoError(t, d.MkdirAll("/y"))
		require.NoError(t, d.SyncDir("/"))
		require.NoError(t, d.Rename("/x/old", "/y/new"))
		d.Crash()
		d.Restart()
		_, o := read(t, d, "/x/old")
		_, n := read(t, d, "/y/new")
		require.True(t, o != n, "seed %d: old %v new %v", seed, o, n)
		both[map[bool]string{true: "old", false: "new"}[o]] = true
	}
	require.Len(t, both, 2, "either name may survive until both directories are synced")
}

// A name made durable in a directory whose own name is not durable goes
// with the directory.
func TestNameInUnsyncedDirectoryMayBeLostWithIt(t *testing.T) {
	lost := 0
	for seed := int64(0); seed < 100; seed++ {
		d := New(seed)
		require.NoError(t, d.MkdirAll("/dir"))
		f := create(t, d, "/dir/a", []byte("x"))
		require.NoError(t, f.Sync())
		require.NoError(t, d.SyncDir("/dir")) // the entry, not /dir's own
		d.Crash()
		d.Restart()
		_, ok := read(t, d, "/dir/a")
		_, err := d.ReadDir("/dir")
		require.Equal(t, ok, err == nil, "seed %d: the file survives exactly when its directory does", seed)
		if !ok {
			lost++
		}
	}
	require.Positive(t, lost)
}

func TestLostWriteShowsOnlyOnceTheCacheIsDropped(t *testing.T) {
	d := New(1)
	f := create(t, d, "/a", []byte("aaaa"))
	require.NoError(t, f.Sync())
	require.NoError(t, d.SyncDir("/"))
	d.SetFaults(Faults{LostWrite: 1})
	_, err := f.WriteAt([]byte("bbbb"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	b, _ := read(t, d, "/a")
	require.Equal(t, "bbbb", string(b), "the cache serves the write")
	d.DropCache()
	b, _ = read(t, d, "/a")
	require.Equal(t, "aaaa", string(b), "the media never got it")
	require.Equal(t, int64(1), d.Stats().LostWrites)
}

func TestMisdirectedWriteLandsASectorOff(t *testing.T) {
	d := New(1)
	f := create(t, d, "/a", make([]byte, 2*SectorSize))
	require.NoError(t, f.Sync())
	require.NoError(t, d.SyncDir("/"))
	d.SetFaults(Faults{MisdirectedWrite: 1})
	_, err := f.WriteAt([]byte("zz"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	m, err := d.Media("/a")
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0}, m[:2])
	require.Equal(t, "zz", string(m[SectorSize:SectorSize+2]))
}

func TestFlipBitDamagesTheMedia(t *testing.T) {
	d := New(1)
	f := create(t, d, "/a", []byte{0})
	require.NoError(t, f.Sync())
	require.NoError(t, d.SyncDir("/"))
	require.NoError(t, d.FlipBit("/a", 0, 3))
	b, _ := read(t, d, "/a")
	require.Equal(t, []byte{8}, b)
	require.Error(t, d.FlipBit("/a", 1, 0), "no byte there")
}

func TestWritePastCapacityIsENOSPC(t *testing.T) {
	d := New(1)
	d.SetCapacity(10)
	f := create(t, d, "/a", make([]byte, 8))
	_, err := f.WriteAt(make([]byte, 4), 8)
	require.ErrorIs(t, err, syscall.ENOSPC)
	b, _ := read(t, d, "/a")
	require.Len(t, b, 8, "nothing written")
	_, err = f.WriteAt(make([]byte, 4), 0)
	require.NoError(t, err, "an overwrite needs no room")
}

func TestKillKeepsThePageCacheAndEndsOpenFiles(t *testing.T) {
	d := New(1)
	f := create(t, d, "/a", []byte("unsynced"))
	d.Kill()
	_, err := f.WriteAt([]byte("x"), 0)
	require.ErrorIs(t, err, ErrDead)
	d.Restart()
	_, err = f.ReadAt(make([]byte, 1), 0)
	require.ErrorIs(t, err, ErrDead, "a handle of the dead process stays dead")
	b, ok := read(t, d, "/a")
	require.True(t, ok)
	require.Equal(t, "unsynced", string(b))
}

func TestDieAfterFailsThatOperationAndEveryLaterOne(t *testing.T) {
	d := New(1)
	f := create(t, d, "/a", nil)
	d.DieAfter(1)
	_, err := f.WriteAt([]byte("a"), 0)
	require.NoError(t, err)
	require.ErrorIs(t, f.Sync(), ErrDead)
	require.ErrorIs(t, d.SyncDir("/"), ErrDead)
	_, err = d.OpenFile("/b", os.O_CREATE|os.O_RDWR, 0o644)
	require.ErrorIs(t, err, ErrDead)
}

func TestSameSeedSameCrash(t *testing.T) {
	run := func() []byte {
		d := New(42)
		f := create(t, d, "/a", nil)
		require.NoError(t, d.SyncDir("/"))
		for i := 0; i < 20; i++ {
			_, err := f.WriteAt([]byte{byte(i), byte(i)}, int64(i)*SectorSize)
			require.NoError(t, err)
			if i%7 == 0 {
				require.NoError(t, f.Sync())
			}
		}
		d.Crash()
		d.Restart()
		b, _ := read(t, d, "/a")
		return b
	}
	require.Equal(t, run(), run())
}

func TestCloneIsIndependent(t *testing.T) {
	d := New(1)
	f := create(t, d, "/a", []byte("a"))
	require.NoError(t, f.Sync())
	require.NoError(t, d.SyncDir("/"))
	c := d.Clone()
	_, err := f.WriteAt([]byte("b"), 0)
	require.NoError(t, err)
	b, _ := read(t, c, "/a")
	require.Equal(t, "a", string(b))
}
