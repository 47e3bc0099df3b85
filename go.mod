module github.com/kraftquorum/kraft

go 1.21

require (
	github.com/google/uuid v1.6.0
	github.com/stretchr/testify v1.11.1
	pgregory.net/rapid v1.2.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
