//go:build !kraftbug

package plant

// Enabled: this build holds the planted bugs' hooks; a build without the
// tag kraftbug (a release) has none (docs/design.md D201).
const Enabled = false
