module github.com/kraftquorum/kraft/kafkawire

go 1.26.0

require (
	github.com/google/uuid v1.6.0
	github.com/kraftquorum/kraft v0.0.0
)

require github.com/twmb/franz-go/pkg/kmsg v1.15.1

require pgregory.net/rapid v1.2.0 // indirect

replace github.com/kraftquorum/kraft => ../
