package storage

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAPIDocNamesEveryField checks the API summary of docs/storage.md:
// each struct it shows names every exported field the type has, and no
// field it does not have (issue 37).
func TestAPIDocNamesEveryField(t *testing.T) {
	b, err := os.ReadFile("../docs/storage.md")
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "\n## API\n")
	require.GreaterOrEqual(t, i, 0, "docs/storage.md has no API section")
	api := doc[i:]
	api = api[:strings.Index(api, "\n```\n")]
	types := map[string]reflect.Type{
		"Options":         reflect.TypeOf(Options{}),
		"Recovery":        reflect.TypeOf(Recovery{}),
		"DamageError":     reflect.TypeOf(DamageError{}),
		"Entry":           reflect.TypeOf(Entry{}),
		"QuorumStateData": reflect.TypeOf(QuorumStateData{}),
	}
	decl := regexp.MustCompile(`(?s)type (\w+) struct \{(.*?)\}`)
	shown := map[string]bool{}
	for _, m := range decl.FindAllStringSubmatch(api, -1) {
		name, body := m[1], m[2]
		typ, ok := types[name]
		require.True(t, ok, "docs/storage.md shows struct %s, which the test does not know", name)
		shown[name] = true
		var named []string
		for _, field := range strings.Split(strings.ReplaceAll(body, "\n", ";"), ";") {
			// "A, B int32" names A and B; the type follows the last name.
			words := strings.Fields(strings.ReplaceAll(field, ",", " , "))
			for j := 0; j+1 < len(words); j++ {
				if j == 0 || words[j-1] == "," {
					named = append(named, words[j])
				}
			}
		}
		var exported []string
		for f := 0; f < typ.NumField(); f++ {
			if typ.Field(f).IsExported() {
				exported = append(exported, typ.Field(f).Name)
			}
		}
		require.ElementsMatch(t, exported, named, "the fields docs/storage.md gives %s", name)
	}
	require.True(t, shown["Options"] && shown["Recovery"], "docs/storage.md shows Options and Recovery")
}
