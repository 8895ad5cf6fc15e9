# quant/: nothing built here yet.
