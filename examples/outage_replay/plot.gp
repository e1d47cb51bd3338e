# Renders outage_replay's --csv timeline as a PNG: the longest mailbox of each instance, ring
# membership with the fault and the recovery actions, RPC success, and connection starts per
# second. outage_replay --png runs it:
#
#   gnuplot -e "csv='replay.csv'; out='replay.png'; title='...'; fault_at=3" plot.gp
#
# Columns: 1 t, 2 event ("-" for none), 3 ring members, 4 provisioned, 5 longest mailbox,
# 6 RPC ok, 7 RPC failed, 8 RPC success, 9 connection starts, 10 reconnects, 11 DOWNs,
# 12 unplaced participants, 13... the longest mailbox of each instance.

if (!exists("csv")) csv = 'replay.csv'
if (!exists("out")) out = 'replay.png'
if (!exists("title")) title = 'outage replay'
if (!exists("fault_at")) fault_at = 3

set terminal pngcairo size 1100,1000 noenhanced font ',10'
set output out
set datafile separator ','
set grid
set key outside right top
set xlabel 'seconds (1 s stands for 20 s of the outage)'
set arrow 1 from fault_at, graph 0 to fault_at, graph 1 nohead dashtype 2 linecolor rgb 'gray40'

stats csv using 1 every ::1 nooutput
ncols = STATS_columns
set xrange [0:STATS_max + 1]

set multiplot layout 4,1 title title
set title 'longest mailbox per instance (log scale; an empty mailbox is drawn at 1)'
set logscale y
set yrange [1:*]
plot for [c=13:ncols] csv using 1:(column(c) > 1 ? column(c) : 1) every ::1 with lines lw 2 \
     title sprintf('instance %d', c - 13)
unset logscale y
set title 'instances in the ring (provisioned: dashed), with the fault and the recovery actions'
set yrange [0:*]
plot csv using 1:4 every ::1 with steps dashtype 2 lw 1 title 'provisioned', \
     csv using 1:3 every ::1 with steps lw 2 title 'in the ring', \
     csv using 1:(strcol(2) ne '-' ? 0.3 : 1/0):2 every ::1 with labels left rotate by 90 \
     font ',8' notitle
set title 'RPC attempts that succeeded (%)'
set yrange [0:105]
plot csv using 1:($8 * 100) every ::1 with lines lw 2 title 'rpc success'
set yrange [0:*]
set title 'connection starts per second, and participants whose call is not placed'
plot csv using 1:9 every ::1 with lines lw 2 title 'connection starts/s', \
     csv using 1:12 every ::1 with lines lw 2 title 'unplaced participants'
unset multiplot
