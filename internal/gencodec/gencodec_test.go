package gencodec

import (
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// TestTagsArePinned: the events of kraft's wire format version 1 keep the
// tags the hand-written codec gave them, whatever the catalogue's order
// (D271).
func TestTagsArePinned(t *testing.T) {
	events := []string{"ReceiveAPIVersionsResponse", "ReceiveFetch", "ReceiveVoteRequest", "ReceiveFetch"}
	tags, err := AssignTags(events, pinnedTags, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"ReceiveAPIVersionsResponse": 13, "ReceiveFetch": 5, "ReceiveVoteRequest": 1}, tags)
}

// TestNewEventTakesTheNextFreeTag: an event that neither the pinned list
// nor the previous file names gets the lowest tag nobody has had; one the
// previous file names keeps its tag, even when an event before it in the
// catalogue is new (D271).
func TestNewEventTakesTheNextFreeTag(t *testing.T) {
	pinned := []string{1: "A", 2: "B", 4: "Retired"}
	tags, err := AssignTags([]string{"B", "New", "A"}, pinned, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"A": 1, "B": 2, "New": 3}, tags)

	tags, err = AssignTags([]string{"Newer", "B", "New", "A"}, pinned, map[int]string{3: "New"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"A": 1, "B": 2, "New": 3, "Newer": 5}, tags, "4 is retired, 3 is New's")
}

// TestTagsAreNeverReused: a tag the previous file gave an event that has
// left the catalogue is refused until it is pinned, and the previous
// file may not contradict the pinned list.
func TestTagsAreNeverReused(t *testing.T) {
	pinned := []string{1: "A"}
	_, err := AssignTags([]string{"A", "New"}, pinned, map[int]string{2: "Gone"})
	require.ErrorContains(t, err, "Gone (tag 2) left the catalogue")
	_, err = AssignTags([]string{"A"}, pinned, map[int]string{2: "A"})
	require.ErrorContains(t, err, "A has tag 1")
	_, err = AssignTags([]string{"A", "B"}, pinned, map[int]string{1: "B"})
	require.ErrorContains(t, err, "tag 1 is pinned")

	tags, err := AssignTags([]string{"A", "New"}, []string{1: "A", 2: "Gone"}, map[int]string{2: "Gone"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"A": 1, "New": 3}, tags)
}

// TestGenerateKeepsTheTagsItWrote: the generated file's tags read back
// as the catalogue's events by tag, so a second run keeps them.
func TestGenerateKeepsTheTagsItWrote(t *testing.T) {
	src, err := Generate(nil)
	require.NoError(t, err)
	tags, err := ParseTags(src)
	require.NoError(t, err)
	want := map[int]string{}
	for tag, name := range pinnedTags {
		if name != "" {
			want[tag] = name
		}
	}
	require.Equal(t, want, tags)
	again, err := Generate(src)
	require.NoError(t, err)
	require.Equal(t, string(src), string(again))
}

type notKraft struct{ A int }

// TestGenerateRefusesWhatHasNoEncoding: a type outside package kraft, or a
// field of a kind the format has no encoding for, is an error, not a
// silently dropped field.
func TestGenerateRefusesWhatHasNoEncoding(t *testing.T) {
	_, err := generate([]reflect.Type{reflect.TypeOf(notKraft{})}, nil)
	require.ErrorContains(t, err, "not a struct of package kraft")
	// VotersAppended has a slice of voters: no encoding.
	_, err = generate([]reflect.Type{reflect.TypeOf(kraft.VotersAppended{})}, nil)
	require.ErrorContains(t, err, "VotersAppended.Voters: no wire encoding")
}

// TestGenerateCanonicalRefusesWhatHasNoEncoding: the canonical encoding,
// too, stops at a type outside package kraft or a field it has no
// encoding for, rather than leaving the field out (D320).
func TestGenerateCanonicalRefusesWhatHasNoEncoding(t *testing.T) {
	_, err := generateCanonical([]reflect.Type{reflect.TypeOf(notKraft{})})
	require.ErrorContains(t, err, "not a struct of package kraft")
	_, err = generateCanonical([]reflect.Type{reflect.TypeOf(kraft.VotersAppended{})})
	require.ErrorContains(t, err, "VotersAppended.Voters: no canonical encoding")
	src, err := GenerateCanonical()
	require.NoError(t, err)
	require.Contains(t, string(src), "case kraft.ReceiveUpdateVoter:", "every message event, those off kraft's wire too")
}
