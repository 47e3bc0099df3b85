package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The configuration file (-config): Java properties, with the names of
// Kafka's controller.properties (and of meta.properties for the ids).

// property is one key and value of a properties file, with the line it
// starts on.
type property struct {
	key, value string
	line       int
}

// parseProperties parses Java properties syntax (java.util.Properties.load):
// one key and value a line, separated by '=', ':' or white space; lines
// whose first non-blank character is '#' or '!' are comments; a line that
// ends in an odd number of backslashes goes on on the next one; backslash
// escapes (\t, \n, \r, \f, \uXXXX, and \ before any other character for
// that character). Values are trimmed, as Kafka's ConfigDef does.
func parseProperties(text string) ([]property, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(text, "\n")
	var out []property
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continued(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if continued(line) {
			line = line[:len(line)-1]
		}
		// The key ends at the first separator not escaped.
		end := len(line)
		for j := 0; j < len(line); j++ {
			if line[j] == '\\' {
				j++
				continue
			}
			if strings.IndexByte("=: \t\f", line[j]) >= 0 {
				end = j
				break
			}
		}
		rest := strings.TrimLeft(line[end:], " \t\f")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') {
			rest = strings.TrimLeft(rest[1:], " \t\f")
		}
		key, err := unescape(line[:end])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		value, err := unescape(rest)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		out = append(out, property{key: key, value: strings.TrimSpace(value), line: start})
	}
	return out, nil
}

// continued: the line ends in an odd number of backslashes.
func continued(line string) bool {
	n := 0
	for n < len(line) && line[len(line)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

func unescape(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", errors.New(`malformed \uXXXX escape`)
			}
			v, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", errors.New(`malformed \uXXXX escape`)
			}
			var buf [utf8.UTFMax]byte
			b.Write(buf[:utf8.EncodeRune(buf[:], rune(v))])
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// propertyFlags maps the keys of Kafka's controller.properties (and
// meta.properties) that kraftd takes to its flags. Keys ending in .ms
// take milliseconds.
var propertyFlags = map[string]string{
	"node.id":                                   "id",
	"controller.quorum.voters":                  "voters",
	"controller.quorum.bootstrap.servers":       "bootstrap-servers",
	"controller.quorum.auto.join.enable":        "auto-join",
	"controller.quorum.election.timeout.ms":     "election-timeout",
	"controller.quorum.fetch.timeout.ms":        "fetch-timeout",
	"controller.quorum.election.backoff.max.ms": "election-backoff-max",
	"controller.quorum.request.timeout.ms":      "request-timeout",
	"controller.quorum.retry.backoff.ms":        "retry-backoff",
	"cluster.id":                                "cluster-id",
	"directory.id":                              "directory-id",
}

// Keys resolved together: the data directory (metadata.log.dir, else the
// first of log.dirs, as Kafka picks its metadata log directory) and the
// listener (the one of listeners that controller.listener.names names
// first).
const (
	keyMetadataLogDir  = "metadata.log.dir"
	keyLogDirs         = "log.dirs"
	keyListeners       = "listeners"
	keyListenerNames   = "controller.listener.names"
	keyProcessRoles    = "process.roles"
	kraftdKeyPrefix    = "kraftd."
	propertyFileMaxLen = 1 << 20
)

// applyConfigFile reads the properties file at path and sets the flags
// its keys stand for, except those in set (given on the command line:
// flags override the file); it adds the flags it sets to set. It returns
// a warning for each key kraftd does not use, and where each flag it set
// comes from ("line N: key").
func applyConfigFile(fs *flag.FlagSet, path string, set map[string]bool) (warnings []string, origins map[string]string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if len(b) > propertyFileMaxLen {
		return nil, nil, fmt.Errorf("%d bytes: too large", len(b))
	}
	props, err := parseProperties(string(b))
	if err != nil {
		return nil, nil, err
	}
	last := map[string]property{} // a key given twice: the last one counts
	for _, p := range props {
		last[p.key] = p
	}
	values := map[string]property{} // by flag name
	for _, p := range last {
		name, ok := propertyFlags[p.key]
		switch {
		case ok:
			if strings.HasSuffix(p.key, ".ms") {
				ms, err := strconv.ParseInt(p.value, 10, 64)
				if err != nil {
					return nil, nil, fmt.Errorf("line %d: %s=%s: want milliseconds (an integer)", p.line, p.key, p.value)
				}
				p.value = strconv.FormatInt(ms, 10) + "ms"
			}
			values[name] = p
		case strings.HasPrefix(p.key, kraftdKeyPrefix):
			name = strings.TrimPrefix(p.key, kraftdKeyPrefix)
			switch name {
			case "config", "version", "random-uuid", "h", "help":
				return nil, nil, fmt.Errorf("line %d: %s: not a configuration key", p.line, p.key)
			}
			if fs.Lookup(name) == nil {
				return nil, nil, fmt.Errorf("line %d: %s: kraftd has no flag -%s", p.line, p.key, name)
			}
			values[name] = p
		case p.key == keyProcessRoles:
			if !containsItem(p.value, "controller") {
				return nil, nil, fmt.Errorf("line %d: %s=%s: kraftd runs the controller role only (want process.roles=controller)", p.line, p.key, p.value)
			}
		case p.key == keyMetadataLogDir, p.key == keyLogDirs, p.key == keyListeners, p.key == keyListenerNames:
		default:
			warnings = append(warnings, fmt.Sprintf("line %d: %s is not used by kraftd", p.line, p.key))
		}
	}
	sort.Strings(warnings)
	if err := kafkaAddressValues(last, values); err != nil {
		return nil, nil, err
	}
	origins = map[string]string{}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if set[name] {
			continue // the command line overrides the file
		}
		p := values[name]
		if err := fs.Set(name, p.value); err != nil {
			return nil, nil, fmt.Errorf("line %d: %s=%s: %v", p.line, p.key, p.value, err)
		}
		set[name] = true
		origins[name] = fmt.Sprintf("line %d: %s", p.line, p.key)
	}
	return warnings, origins, nil
}

// kafkaAddressValues sets values' -dir, -listen and -listener-name from
// Kafka's metadata.log.dir (or the first of log.dirs), listeners and
// controller.listener.names in last, the properties by key.
func kafkaAddressValues(last, values map[string]property) error {
	if p, ok := last[keyMetadataLogDir]; ok {
		values["dir"] = p
	} else if p, ok := last[keyLogDirs]; ok {
		p.value = strings.TrimSpace(strings.Split(p.value, ",")[0])
		values["dir"] = p
	}
	if p, ok := last[keyListeners]; ok {
		addr, err := controllerListener(p.value, last[keyListenerNames].value)
		if err != nil {
			return fmt.Errorf("line %d: %s=%s: %w", p.line, p.key, p.value, err)
		}
		p.value = addr
		values["listen"] = p
	} else if p, ok := last[keyListenerNames]; ok && strings.TrimSpace(p.value) == "" {
		return fmt.Errorf("line %d: %s is empty", p.line, p.key)
	}
	if p, ok := last[keyListenerNames]; ok && strings.TrimSpace(p.value) != "" {
		p.value = strings.TrimSpace(strings.Split(p.value, ",")[0])
		values["listener-name"] = p
	}
	return nil
}

// controllerListener picks the address of the controller listener from
// Kafka's listeners (NAME://host:port, comma separated): the one named
// first in controller.listener.names, or the only one.
func controllerListener(listeners, names string) (string, error) {
	want := strings.TrimSpace(strings.Split(names, ",")[0])
	var found []string
	for _, l := range strings.Split(listeners, ",") {
		l = strings.TrimSpace(l)
		i := strings.Index(l, "://")
		if i <= 0 {
			return "", fmt.Errorf("listener %q: want NAME://host:port", l)
		}
		name, addr := l[:i], l[i+3:]
		if want != "" && name == want {
			return addr, nil
		}
		found = append(found, addr)
	}
	if want != "" {
		return "", fmt.Errorf("no listener named %s (controller.listener.names)", want)
	}
	if len(found) != 1 {
		return "", errors.New("several listeners: controller.listener.names must name the controller's")
	}
	return found[0], nil
}

// containsItem: list, comma separated, has item.
func containsItem(list, item string) bool {
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == item {
			return true
		}
	}
	return false
}
