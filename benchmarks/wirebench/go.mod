module github.com/kraftquorum/kraft/benchmarks/wirebench

go 1.26
