module github.com/kraftquorum/kraft/benchmarks/etcd37

go 1.26

require go.etcd.io/raft/v3 v3.7.0

require google.golang.org/protobuf v1.36.11 // indirect
