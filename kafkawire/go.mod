module github.com/kraftquorum/kraft/kafkawire

go 1.26.0

require (
	github.com/google/uuid v1.6.0
	github.com/kraftquorum/kraft v0.0.0
	github.com/stretchr/testify v1.11.1
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
	pgregory.net/rapid v1.2.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/kraftquorum/kraft => ../
