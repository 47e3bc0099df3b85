package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/kraftd.md names every flag kraftd and kraftd format define, with
// the defaults the code has, and every key of Kafka's controller.properties
// the configuration file maps (issue 37).

// kraftdDoc returns docs/kraftd.md.
func kraftdDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "kraftd.md"))
	require.NoError(t, err)
	return string(b)
}

// docSection returns the text of the section of doc under the "## "
// heading that starts with title, up to the next "## " heading.
func docSection(t *testing.T, doc, title string) string {
	t.Helper()
	i := strings.Index(doc, "\n## "+title)
	require.GreaterOrEqual(t, i, 0, "no section %q", title)
	rest := doc[i+1:]
	if j := strings.Index(rest[1:], "\n## "); j >= 0 {
		rest = rest[:j+1]
	}
	return rest
}

// tableRows returns the cells of the rows of the markdown tables in text,
// the header and separator rows left out.
func tableRows(text string) [][]string {
	var rows [][]string
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|---") {
			continue // a header
		}
		line = strings.ReplaceAll(line, `\|`, "\x00")
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, "\x00", "|")))
		}
		rows = append(rows, cells)
	}
	return rows
}

// flagNames returns the names of the flags of fs, sorted.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	return names
}

// flagCell matches a flag table's first cell: `-name` or `-name ARG`.
var flagCell = regexp.MustCompile("^`-([a-z-]+)[ `]")

// plainDefault matches a default cell that is one value: `v`, or `v`
// followed by a parenthesised remark (a `-flag` value names another
// flag's value).
var plainDefault = regexp.MustCompile("^`([^`]+)`(?: \\([^)]*\\))?$")

// TestFlagTableNamesEveryFlag checks docs/kraftd.md's flag table against
// newFlagSet: a row for each flag, no row for a flag kraftd does not
// have, and each default given as one value is the flag's.
func TestFlagTableNamesEveryFlag(t *testing.T) {
	var r rawFlags
	fs := newFlagSet(&r)
	var documented []string
	for _, row := range tableRows(docSection(t, kraftdDoc(t), "Flags")) {
		m := flagCell.FindStringSubmatch(row[0] + " ")
		require.NotNil(t, m, "row %q: the first cell is not a flag", row)
		name := m[1]
		documented = append(documented, name)
		f := fs.Lookup(name)
		require.NotNil(t, f, "docs/kraftd.md's flag table has -%s, which kraftd does not define", name)
		require.Len(t, row, 3, "row of -%s", name)
		if d := plainDefault.FindStringSubmatch(row[1]); d != nil && !strings.HasPrefix(d[1], "-") {
			require.Equal(t, f.DefValue, d[1], "the default of -%s", name)
		}
	}
	sort.Strings(documented)
	require.Equal(t, flagNames(fs), documented, "the flags of docs/kraftd.md's table")
}

// TestFormatSectionNamesEveryFormatFlag checks that docs/kraftd.md's
// section on kraftd format names each flag of newFormatFlagSet.
func TestFormatSectionNamesEveryFormatFlag(t *testing.T) {
	var r formatFlags
	section := docSection(t, kraftdDoc(t), "Formatting a data directory")
	for _, name := range flagNames(newFormatFlagSet(&r)) {
		require.Regexp(t, regexp.MustCompile(`(^|[^a-z-])-`+regexp.QuoteMeta(name)+`([^a-z-]|$)`), section,
			"docs/kraftd.md's section on kraftd format does not name -%s", name)
	}
}

// TestConfigTableNamesEveryKey checks that docs/kraftd.md's table of the
// configuration file names each key kraftd maps to a flag, with that
// flag.
func TestConfigTableNamesEveryKey(t *testing.T) {
	rows := tableRows(docSection(t, kraftdDoc(t), "The configuration file"))
	flagOf := map[string]string{}
	for _, row := range rows {
		require.Len(t, row, 3, "row %q", row)
		for _, key := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(row[0], -1) {
			flagOf[key[1]] = row[1]
		}
	}
	keys := []string{keyMetadataLogDir, keyLogDirs, keyListeners, keyListenerNames, keyProcessRoles}
	for key := range propertyFlags {
		keys = append(keys, key)
	}
	for _, key := range keys {
		_, ok := flagOf[key]
		require.True(t, ok, "docs/kraftd.md's configuration table lacks %s", key)
	}
	for key, name := range propertyFlags {
		require.Contains(t, flagOf[key], "`-"+name+"`", "the flag of %s", key)
	}
	require.Contains(t, flagOf[keyListenerNames], "`-listener-name`", "the flag of %s", keyListenerNames)
}
