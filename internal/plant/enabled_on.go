//go:build kraftbug

package plant

// Enabled: this build holds the planted bugs' hooks (the build tag
// kraftbug, docs/design.md D201).
const Enabled = true
