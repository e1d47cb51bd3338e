# Renders overload's --series-csv as a PNG: the supervisor's queue length (top) and its goodput
# (bottom) over time, one line per configuration; the dashed line marks the end of the load.
#
#   gnuplot -e "series='series.csv'; out='overload.png'; load_s=10" bench/overload/plot.gp
#
# Optional: configs='none shedding' (the configurations to draw; default all five), title='...'.

if (!exists("series")) series = 'series.csv'
if (!exists("out")) out = 'overload.png'
if (!exists("load_s")) load_s = 10
if (!exists("configs")) configs = 'none rate_limit shedding bounded partitioned'
if (!exists("title")) title = 'One DynamicSupervisor offered 10x its start capacity'

set terminal pngcairo size 1100,900 noenhanced font ',10'
set output out
set datafile separator ','
set key outside right top
set grid
set xlabel 'seconds since the load began'
set arrow 1 from load_s, graph 0 to load_s, graph 1 nohead dashtype 2 linecolor rgb 'gray40'

# Column 1 is the configuration: each line keeps its own rows (1/0 drops the others).
mine(c, v) = strcol(1) eq c ? v : 1/0

set multiplot layout 2,1 title title
# A queue spans 0 to a million messages: log scale, an empty queue drawn at 1.
set title 'supervisor queue length (messages, summed over partitions)'
set logscale y
set yrange [1:*]
plot for [c in configs] series using 2:(mine(c, $3 > 1 ? $3 : 1)) every ::1 with lines lw 2 title c
unset logscale y
set yrange [0:*]
set title 'goodput (children started per second, 100 ms intervals)'
plot for [c in configs] series using 2:(mine(c, $6)) every ::1 with lines lw 2 title c
unset multiplot
