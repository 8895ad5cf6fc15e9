# infer/: nothing built here yet.
