package kraft_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The documentation's relative links resolve: every markdown link of
// README.md and docs/*.md that is not to another site names a file of the
// repository and, when it has a fragment, a heading of that file (issue 37).

// mdLink matches an inline markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// htmlAnchor matches an explicit HTML anchor: <a id="x"> or <a name="x">.
var htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)

// inlineCode matches a code span, whose brackets are not links.
var inlineCode = regexp.MustCompile("`[^`]*`")

// docProse returns the lines of a markdown text outside fenced code
// blocks, with code spans blanked, each with its 1-based line number.
func docProse(doc string) map[int]string {
	prose := map[int]string{}
	fenced := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			prose[i+1] = inlineCode.ReplaceAllString(line, "``")
		}
	}
	return prose
}

// headingAnchor is the anchor GitHub gives a heading: lower case, the
// punctuation other than '-' and '_' dropped, spaces turned to '-'.
func headingAnchor(heading string) string {
	heading = strings.ToLower(strings.TrimSpace(heading))
	var b strings.Builder
	for _, r := range heading {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r > 127 && isLetterOrDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isLetterOrDigit(r rune) bool {
	return strings.ToLower(string(r)) != strings.ToUpper(string(r))
}

// docAnchors returns the anchors of a markdown text: its headings', with
// GitHub's -1, -2 suffixes on repeats, and its explicit HTML anchors.
func docAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	prose := docProse(doc)
	lines := strings.Split(doc, "\n")
	for i, line := range lines {
		if _, ok := prose[i+1]; !ok {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		// Links in a heading keep only their text.
		text = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
		a := headingAnchor(text)
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// brokenLinks returns the relative links of the markdown file path (a
// path from the repository's root) that name no file, or no heading of
// the file they name.
func brokenLinks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(b)
	var broken []string
	prose := docProse(doc)
	for n := 1; n <= len(strings.Split(doc, "\n")); n++ {
		line, ok := prose[n]
		if !ok {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			resolved := path
			if file != "" {
				resolved = filepath.Join(filepath.Dir(path), file)
				if _, err := os.Stat(resolved); err != nil {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: no file %s", path, n, target, resolved))
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(resolved, ".md") {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: a fragment into a file that is not markdown", path, n, target))
				continue
			}
			tb, err := os.ReadFile(resolved)
			require.NoError(t, err)
			if !docAnchors(string(tb))[frag] {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: %s has no heading #%s", path, n, target, resolved, frag))
			}
		}
	}
	return broken
}

// TestDocLinksResolve checks every relative link of README.md and
// docs/*.md: the file it names exists and, with a fragment, has that
// heading.
func TestDocLinksResolve(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	docs = append([]string{"README.md"}, docs...)
	var broken []string
	for _, d := range docs {
		broken = append(broken, brokenLinks(t, d)...)
	}
	require.Empty(t, broken, "broken links:\n%s", strings.Join(broken, "\n"))
}

// TestDocLinkCheckerFindsBrokenLinks checks the checker on a document with
// one good and three broken links.
func TestDocLinkCheckerFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	doc := "# Top\n\n## A heading, with `code`\n\n" +
		"[good](#a-heading-with-code) [good file](other.md#there)\n" +
		"[bad anchor](#nowhere) [bad file](missing.md) [bad far anchor](other.md#nowhere)\n" +
		"```\n[in code](missing2.md)\n```\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "doc.md"), []byte(doc), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.md"), []byte("# There\n"), 0o600))
	broken := brokenLinks(t, filepath.Join(dir, "doc.md"))
	require.Len(t, broken, 3, "%v", broken)
	require.Contains(t, broken[0], "#nowhere")
	require.Contains(t, broken[1], "missing.md")
	require.Contains(t, broken[2], "other.md#nowhere")
}

// loggedEvents returns the values of package node's Event constants that
// its code uses (a constant declared and never logged is left out).
func loggedEvents(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("node", "*.go"))
	require.NoError(t, err)
	values := map[string]string{}     // constant name: value
	declared := map[*ast.Ident]bool{} // the names in the declarations
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		parsed = append(parsed, file)
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Event") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					require.True(t, ok, "%s is not a string literal", name.Name)
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					values[name.Name] = v
					declared[name] = true
				}
			}
		}
	}
	require.NotEmpty(t, values, "package node has no Event constants")
	used := map[string]bool{}
	for _, file := range parsed {
		ast.Inspect(file, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && !declared[id] {
				if v, ok := values[id.Name]; ok {
					used[v] = true
				}
			}
			return true
		})
	}
	var events []string
	for v := range used {
		events = append(events, v)
	}
	sort.Strings(events)
	return events
}

// tableEvents returns the events the first column of the table under the
// heading title of the markdown file path names, sorted.
func tableEvents(t *testing.T, path, title string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "\n## "+title+"\n")
	require.GreaterOrEqual(t, i, 0, "%s has no section %q", path, title)
	section := doc[i+1:]
	if j := strings.Index(section[1:], "\n## "); j >= 0 {
		section = section[:j+1]
	}
	var events []string
	rows := 0
	lines := strings.Split(section, "\n")
	for k, line := range lines {
		if !strings.HasPrefix(line, "| `") || k+1 < len(lines) && strings.HasPrefix(lines[k+1], "|---") {
			continue // not a row, or the header
		}
		rows++
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(first, -1) {
			events = append(events, m[1])
		}
	}
	require.NotZero(t, rows, "%s's section %q has no table", path, title)
	sort.Strings(events)
	return events
}

// TestEventTablesNameEveryLoggedEvent checks the tables of the log's
// events, in docs/kraftd.md and docs/operations.md, against package
// node's Event constants: each event the runtime logs has a row, and no
// row names one it does not log.
func TestEventTablesNameEveryLoggedEvent(t *testing.T) {
	logged := loggedEvents(t)
	require.Contains(t, logged, "role_changed")
	require.Equal(t, logged, tableEvents(t, filepath.Join("docs", "kraftd.md"), "The log"), "docs/kraftd.md's events")
	require.Equal(t, logged, tableEvents(t, filepath.Join("docs", "operations.md"), "Reading the log"), "docs/operations.md's events")
}

// decisionHeading matches a decision of docs/design.md: "D12. **Title".
var decisionHeading = regexp.MustCompile(`(?m)^D(\d+)\. \*\*`)

// designIndex returns the decision numbers the index of docs/design.md
// lists, with how often each is listed.
func designIndex(t *testing.T, doc string) map[string]int {
	t.Helper()
	i := strings.Index(doc, "\n## Index of decisions by topic\n")
	require.GreaterOrEqual(t, i, 0, "docs/design.md has no index")
	section := doc[i+1:]
	j := strings.Index(section[1:], "\n## ")
	require.GreaterOrEqual(t, j, 0)
	listed := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^- D(\d+) `).FindAllStringSubmatch(section[:j+1], -1) {
		listed[m[1]]++
	}
	return listed
}

// TestDesignIndexNamesEveryDecision checks the index at the top of
// docs/design.md (D191): every decision is listed exactly once, and every
// entry names a decision of the file.
func TestDesignIndexNamesEveryDecision(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "design.md"))
	require.NoError(t, err)
	doc := string(b)
	listed := designIndex(t, doc)
	decided := map[string]bool{}
	for _, m := range decisionHeading.FindAllStringSubmatch(doc, -1) {
		decided[m[1]] = true
	}
	require.NotEmpty(t, decided)
	var missing, extra, twice []string
	for d := range decided {
		if listed[d] == 0 {
			missing = append(missing, "D"+d)
		}
	}
	for d, n := range listed {
		if !decided[d] {
			extra = append(extra, "D"+d)
		}
		if n > 1 {
			twice = append(twice, "D"+d)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(twice)
	require.Empty(t, missing, "decisions the index of docs/design.md does not list")
	require.Empty(t, extra, "index entries of docs/design.md that name no decision")
	require.Empty(t, twice, "decisions the index lists more than once")
}

// TestReadmeIsAFrontDoor checks README.md's shape (D190): at most 300
// lines, the two commands as written, the entry points, the cluster and the
// host contract with its eleven rules.
func TestReadmeIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	doc := string(b)
	require.LessOrEqual(t, strings.Count(doc, "\n"), 300, "README.md's lines")
	require.Contains(t, doc, "\ngo run ./cmd/kraftsim ")
	require.Contains(t, doc, "\ngo test ./... ")
	for _, h := range []string{"## Which entry point", "## Commands", "## A three-node cluster in a few commands",
		"## The host contract", "## Install", "## Stability and versioning", "## License", "## Where to read next"} {
		require.Contains(t, doc, "\n"+h+"\n")
	}
	i := strings.Index(doc, "\n## The host contract\n")
	contract := doc[i+1:]
	contract = contract[:strings.Index(contract[1:], "\n## ")+1]
	for n := 1; n <= 11; n++ {
		require.Contains(t, contract, fmt.Sprintf("\n%d. **", n), "the host contract's rule %d", n)
	}
}
