package kraft
