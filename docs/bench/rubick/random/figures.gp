set terminal svg size 800,500
set output 'docs/bench/rubick/random/jct_cdf.svg'
set datafile separator ','
set logscale x
set grid
set xlabel 'job completion time (h)'
set ylabel 'CDF'
set key right bottom
plot 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'rubick' ? $3 : NaN) with lines lw 2 title 'rubick', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'elastic+plan' ? $3 : NaN) with lines lw 2 title 'elastic+plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'synergy+plan' ? $3 : NaN) with lines lw 2 title 'synergy+plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'fifo+plan' ? $3 : NaN) with lines lw 2 title 'fifo+plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'tiresias+plan' ? $3 : NaN) with lines lw 2 title 'tiresias+plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'gandiva+plan' ? $3 : NaN) with lines lw 2 title 'gandiva+plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'elastic' ? $3 : NaN) with lines lw 2 title 'elastic', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'synergy' ? $3 : NaN) with lines lw 2 title 'synergy', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'fifo' ? $3 : NaN) with lines lw 2 title 'fifo', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'tiresias' ? $3 : NaN) with lines lw 2 title 'tiresias', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'gandiva' ? $3 : NaN) with lines lw 2 title 'gandiva', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'rubick-plan' ? $3 : NaN) with lines lw 2 title 'rubick-plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'rubick-cpu' ? $3 : NaN) with lines lw 2 title 'rubick-cpu', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'rubick-reconf' ? $3 : NaN) with lines lw 2 title 'rubick-reconf'
unset logscale x
set datafile separator whitespace
set output 'docs/bench/rubick/random/makespan.svg'
set style data histograms
set style fill solid 0.8
set boxwidth 0.8
set xlabel ''
set ylabel 'hours'
set key left top
set yrange [0:*]
plot 'docs/bench/rubick/random/summary.dat' using 2:xtic(1) title 'average JCT', '' using 3 title 'makespan'
unset style
set yrange [*:*]
set terminal pngcairo size 800,500
set output 'docs/bench/rubick/random/jct_cdf.png'
set datafile separator ','
set logscale x
set grid
set xlabel 'job completion time (h)'
set ylabel 'CDF'
set key right bottom
plot 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'rubick' ? $3 : NaN) with lines lw 2 title 'rubick', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'elastic+plan' ? $3 : NaN) with lines lw 2 title 'elastic+plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'synergy+plan' ? $3 : NaN) with lines lw 2 title 'synergy+plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'fifo+plan' ? $3 : NaN) with lines lw 2 title 'fifo+plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'tiresias+plan' ? $3 : NaN) with lines lw 2 title 'tiresias+plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'gandiva+plan' ? $3 : NaN) with lines lw 2 title 'gandiva+plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'elastic' ? $3 : NaN) with lines lw 2 title 'elastic', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'synergy' ? $3 : NaN) with lines lw 2 title 'synergy', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'fifo' ? $3 : NaN) with lines lw 2 title 'fifo', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'tiresias' ? $3 : NaN) with lines lw 2 title 'tiresias', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'gandiva' ? $3 : NaN) with lines lw 2 title 'gandiva', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'rubick-plan' ? $3 : NaN) with lines lw 2 title 'rubick-plan', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'rubick-cpu' ? $3 : NaN) with lines lw 2 title 'rubick-cpu', 'docs/bench/rubick/random/jct.csv' using ($2/3600):(strcol(1) eq 'rubick-reconf' ? $3 : NaN) with lines lw 2 title 'rubick-reconf'
unset logscale x
set datafile separator whitespace
set output 'docs/bench/rubick/random/makespan.png'
set style data histograms
set style fill solid 0.8
set boxwidth 0.8
set xlabel ''
set ylabel 'hours'
set key left top
set yrange [0:*]
plot 'docs/bench/rubick/random/summary.dat' using 2:xtic(1) title 'average JCT', '' using 3 title 'makespan'
unset style
set yrange [*:*]
