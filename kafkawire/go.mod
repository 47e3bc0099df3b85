module github.com/kraftquorum/kraft/kafkawire

go 1.26.0

require (
	github.com/google/uuid v1.6.0
	github.com/kraftquorum/kraft v0.0.0
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
	pgregory.net/rapid v1.2.0
)

replace github.com/kraftquorum/kraft => ../
