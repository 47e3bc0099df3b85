package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/kraftquorum/kraft/sim"
)

// roleColors are the fills of the role segments, in legend order.
var roleColors = []struct{ role, color string }{
	{"Unattached", "#d9d9d9"},
	{"Prospective", "#ffe08a"},
	{"Candidate", "#f4a340"},
	{"Leader", "#2e8b57"},
	{"Follower", "#6fa8dc"},
	{"Resigned", "#b48ead"},
	{roleDown, "#444444"},
}

func roleColor(role string) string {
	for _, rc := range roleColors {
		if rc.role == role {
			return rc.color
		}
	}
	return "#ffffff"
}

// markColors are the colours of the operation markers, in legend order.
var markColors = []struct {
	kind  sim.OpKind
	label string
	color string
}{
	{sim.OpCrash, "crash", "#c0392b"},
	{sim.OpRestart, "restart", "#27ae60"},
	{sim.OpLoseDisk, "disk loss", "#000000"},
	{sim.OpPartition, "partition", "#8e44ad"},
	{sim.OpHeal, "heal", "#2980b9"},
	{sim.OpResign, "resign", "#d35400"},
}

func markColor(k sim.OpKind) string {
	for _, mc := range markColors {
		if mc.kind == k || (k == sim.OpOneWay && mc.kind == sim.OpPartition) {
			return mc.color
		}
	}
	return "#000000"
}

// installColor is the colour of the snapshot-install markers.
const installColor = "#f1c40f"

// diamond is an SVG polygon's points for a diamond of half-width r at
// (cx, cy).
func diamond(cx, cy, r float64) string {
	return fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f", cx, cy-r, cx+r, cy, cx, cy+r, cx-r, cy)
}

// esc escapes text for SVG (XML) content and attributes.
func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}

// renderSVG draws the run: one lane per replica with its role over virtual
// time as coloured segments (leader segments labelled with their epoch),
// partitions hatched over the lanes they cut off, snapshot installs as
// small diamonds on their lanes, operations as vertical lines labelled at
// the top, a time axis and a legend.
// svg layout constants.
const (
	svgWidth   = 1100
	svgLeft    = 110
	svgRight   = 30
	svgLaneH   = 24
	svgLaneG   = 10
	svgPlotW   = svgWidth - svgLeft - svgRight
	svgFontSz  = 12
	svgLabelH  = 13 // height of a row of operation labels
	svgRowsTop = 58
)

// svgPlot is one picture being drawn: the observer's record, the layout
// computed from it, and the output.
type svgPlot struct {
	o        *observer
	total    time.Duration
	labelRow []int
	lane0    int
	lanesEnd int
	axisY    int
	legendY  int
	b        strings.Builder
}

func (v *svgPlot) p(format string, args ...interface{}) { fmt.Fprintf(&v.b, format, args...) }

// x is the horizontal position of virtual time t.
func (v *svgPlot) x(t time.Duration) float64 {
	return svgLeft + float64(t)/float64(v.total)*svgPlotW
}

func renderSVG(o *observer, sc scenario, cfg config) string {
	const (
		width  = svgWidth
		left   = svgLeft
		fontSz = svgFontSz
	)
	v := &svgPlot{o: o, total: o.c.Now()}
	if v.total <= 0 {
		v.total = time.Second
	}
	var rows int
	rows, v.labelRow = packLabels(o.marks, v.x)
	v.lane0 = svgRowsTop + (rows+1)*svgLabelH + 6
	v.lanesEnd = v.lane0 + len(o.segs)*(svgLaneH+svgLaneG) - svgLaneG
	v.axisY = v.lanesEnd + 12
	v.legendY = v.axisY + 48
	height := v.legendY + 70

	v.p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	v.p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n", width, height, width, height, fontSz)
	v.p(`<defs><pattern id="cut" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
		`<rect width="8" height="8" fill="#c0392b" fill-opacity="0.12"/><line x1="0" y1="0" x2="0" y2="8" stroke="#c0392b" stroke-width="3" stroke-opacity="0.6"/></pattern></defs>` + "\n")
	v.p(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	v.p(`<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left, esc(fmt.Sprintf("kraftsim: scenario %s, seed %d", sc.name, cfg.seed)))
	v.p(`<text x="%d" y="44" fill="#555555">%s</text>`+"\n", left, esc(fmt.Sprintf("%d voters, %d observers; role of each replica over %s of virtual time", cfg.voters, cfg.observers, fmtTime(v.total))))
	v.lanes()
	v.partitions()
	v.installs()
	v.marks()
	v.axis()
	v.legend()
	return v.b.String()
}

// lanes draws each replica's role over time.
func (v *svgPlot) lanes() {
	const (
		left  = svgLeft
		laneH = svgLaneH
		laneG = svgLaneG
	)
	// Lanes.
	for id, segs := range v.o.segs {
		y := v.lane0 + id*(laneH+laneG)
		kind := "voter"
		if id >= v.o.voters {
			kind = "observer"
		}
		v.p(`<g class="lane" id="lane-r%d">`+"\n", id)
		v.p(`<text x="%d" y="%d" text-anchor="end">r%d <tspan fill="#777777">%s</tspan></text>`+"\n", left-8, y+laneH/2+4, id, kind)
		for i, s := range segs {
			end := v.total
			if i+1 < len(segs) {
				end = segs[i+1].from
			}
			x0, x1 := v.x(s.from), v.x(end)
			if x1-x0 < 0.3 {
				x1 = x0 + 0.3
			}
			what := s.role
			if s.role != roleDown {
				what = fmt.Sprintf("%s, epoch %d", s.role, s.epoch)
				if s.role == "Follower" {
					what += fmt.Sprintf(", leader r%d", s.leader)
				}
			}
			v.p(`<rect class="seg" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
				x0, y, x1-x0, laneH, roleColor(s.role), esc(fmt.Sprintf("r%d %s: %s to %s", id, what, fmtTime(s.from), fmtTime(end))))
			if s.role == "Leader" && x1-x0 >= 22 {
				v.p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#ffffff" font-weight="bold">e%d</text>`+"\n", (x0+x1)/2, y+laneH/2+4, s.epoch)
			}
		}
		v.p("</g>\n")
	}
}

// partitions hatches the lanes of a cut-off group.
func (v *svgPlot) partitions() {
	const (
		laneH = svgLaneH
		laneG = svgLaneG
	)
	// Partitions, hatched over the lanes of the cut-off group.
	for _, s := range v.o.spans {
		for _, id := range s.group {
			y := v.lane0 + int(id)*(laneH+laneG)
			what := "cut off"
			if s.oneWay {
				what = "cut off one way (its messages out are dropped)"
			}
			v.p(`<rect class="partition" x="%.1f" y="%d" width="%.1f" height="%d" fill="url(#cut)" stroke="#c0392b" stroke-dasharray="3,2"><title>%s</title></rect>`+"\n",
				v.x(s.from), y-2, v.x(s.to)-v.x(s.from), laneH+4, esc(fmt.Sprintf("r%d %s from %s to %s", id, what, fmtTime(s.from), fmtTime(s.to))))
		}
	}
}

// installs marks snapshot installs on the lane of the replica that
// installed.
func (v *svgPlot) installs() {
	const (
		laneH = svgLaneH
		laneG = svgLaneG
	)
	// Snapshot installs, on the lane of the replica that installed.
	for _, in := range v.o.installs {
		cy := float64(v.lane0+int(in.id)*(laneH+laneG)) + laneH/2
		v.p(`<polygon class="install" points="%s" fill="%s" stroke="#000000" stroke-width="1"><title>%s</title></polygon>`+"\n",
			diamond(v.x(in.at), cy, 6), installColor, esc(fmt.Sprintf("r%d installs r%d's snapshot (end offset %d, epoch %d) at %s", in.id, in.from, in.snapshot.Offset, in.snapshot.Epoch, fmtTime(in.at))))
	}
}

// marks draws the operations.
func (v *svgPlot) marks() {
	const (
		labelH  = svgLabelH
		rowsTop = svgRowsTop
	)
	// Operations: a vertical line from the label's row down through the
	// lanes. A label that finds no free row is left out (the line keeps it
	// as a tooltip).
	for i, m := range v.o.marks {
		mx := v.x(m.at)
		col := markColor(m.kind)
		row := v.labelRow[i]
		top := rowsTop + (row+1)*labelH - 10
		if row < 0 {
			top = v.lane0 - 6
		}
		v.p(`<line class="mark" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="4,3"><title>%s</title></line>`+"\n",
			mx, top, mx, v.lanesEnd+4, col, esc(fmt.Sprintf("%s at %s", m.label, fmtTime(m.at))))
		if row >= 0 {
			v.p(`<text x="%.1f" y="%d" fill="%s" font-size="11">%s</text>`+"\n", mx+3, rowsTop+(row+1)*labelH, col, esc(m.label))
		}
	}
}

// axis draws the time axis.
func (v *svgPlot) axis() {
	const (
		left  = svgLeft
		plotW = svgPlotW
	)
	// Time axis.
	v.p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#000000"/>`+"\n", left, v.axisY, left+plotW, v.axisY)
	step := niceStep(v.total / 10)
	for t := time.Duration(0); t <= v.total; t += step {
		tx := v.x(t)
		v.p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000000"/>`+"\n", tx, v.axisY, tx, v.axisY+5)
		v.p(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", tx, v.axisY+18, esc(axisLabel(t)))
	}
	v.p(`<text x="%d" y="%d" text-anchor="middle" fill="#555555">virtual time</text>`+"\n", left+plotW/2, v.axisY+34)
}

// legend draws the legend.
func (v *svgPlot) legend() {
	const left = svgLeft
	// Legend.
	v.p(`<g class="legend">` + "\n")
	lx := left
	for _, rc := range roleColors {
		label := rc.role
		v.p(`<rect x="%d" y="%d" width="14" height="14" fill="%s" stroke="#999999"/><text x="%d" y="%d">%s</text>`+"\n", lx, v.legendY, rc.color, lx+18, v.legendY+11, esc(label))
		lx += 26 + 7*len(label) + 10
	}
	v.p(`<rect x="%d" y="%d" width="14" height="14" fill="url(#cut)" stroke="#c0392b"/><text x="%d" y="%d">cut off by a partition</text>`+"\n", lx, v.legendY, lx+18, v.legendY+11)
	lx = left
	ly := v.legendY + 26
	for _, mc := range markColors {
		v.p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="4,3"/><text x="%d" y="%d">%s</text>`+"\n", lx+7, ly, lx+7, ly+14, mc.color, lx+18, ly+11, esc(mc.label))
		lx += 26 + 7*len(mc.label) + 10
	}
	v.p(`<polygon points="%s" fill="%s" stroke="#000000" stroke-width="1"/><text x="%d" y="%d">snapshot installed</text>`+"\n", diamond(float64(lx+7), float64(ly+7), 6), installColor, lx+18, ly+11)
	lx += 26 + 7*len("snapshot installed") + 10
	v.p(`<text x="%d" y="%d" fill="#555555">eN: leader of epoch N</text>`+"\n", lx, ly+11)
	v.p("</g>\n</svg>\n")
}

// packLabels gives each operation's label the first of up to maxRows rows
// where it does not overlap the label before it in that row (-1: no room).
// It returns the number of rows used and each label's row.
func packLabels(marks []mark, x func(time.Duration) float64) (int, []int) {
	const maxRows = 4
	var ends []float64
	out := make([]int, len(marks))
	for i, m := range marks {
		mx := x(m.at)
		w := 6.2*float64(len(m.label)) + 8
		out[i] = -1
		for r := 0; r < maxRows; r++ {
			if r == len(ends) {
				ends = append(ends, 0)
			}
			if ends[r] <= mx {
				ends[r] = mx + w
				out[i] = r
				break
			}
		}
	}
	return len(ends), out
}

func axisLabel(t time.Duration) string {
	if t%time.Second == 0 {
		return fmt.Sprintf("%ds", int64(t/time.Second))
	}
	return trimFloat(t.Seconds()) + "s"
}
