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
func renderSVG(o *observer, sc scenario, cfg config) string {
	const (
		width   = 1100
		left    = 110
		right   = 30
		laneH   = 24
		laneG   = 10
		plotW   = width - left - right
		fontSz  = 12
		labelH  = 13 // height of a row of operation labels
		rowsTop = 58
	)
	total := o.c.Now()
	if total <= 0 {
		total = time.Second
	}
	x := func(t time.Duration) float64 { return left + float64(t)/float64(total)*plotW }
	rows, labelRow := packLabels(o.marks, x)
	lane0 := rowsTop + (rows+1)*labelH + 6
	n := len(o.segs)
	lanesEnd := lane0 + n*(laneH+laneG) - laneG
	axisY := lanesEnd + 12
	legendY := axisY + 48
	height := legendY + 70

	var b strings.Builder
	p := func(format string, args ...interface{}) { fmt.Fprintf(&b, format, args...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n", width, height, width, height, fontSz)
	p(`<defs><pattern id="cut" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
		`<rect width="8" height="8" fill="#c0392b" fill-opacity="0.12"/><line x1="0" y1="0" x2="0" y2="8" stroke="#c0392b" stroke-width="3" stroke-opacity="0.6"/></pattern></defs>` + "\n")
	p(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	p(`<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left, esc(fmt.Sprintf("kraftsim: scenario %s, seed %d", sc.name, cfg.seed)))
	p(`<text x="%d" y="44" fill="#555555">%s</text>`+"\n", left, esc(fmt.Sprintf("%d voters, %d observers; role of each replica over %s of virtual time", cfg.voters, cfg.observers, fmtTime(total))))

	// Lanes.
	for id, segs := range o.segs {
		y := lane0 + id*(laneH+laneG)
		kind := "voter"
		if id >= o.voters {
			kind = "observer"
		}
		p(`<g class="lane" id="lane-r%d">`+"\n", id)
		p(`<text x="%d" y="%d" text-anchor="end">r%d <tspan fill="#777777">%s</tspan></text>`+"\n", left-8, y+laneH/2+4, id, kind)
		for i, s := range segs {
			end := total
			if i+1 < len(segs) {
				end = segs[i+1].from
			}
			x0, x1 := x(s.from), x(end)
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
			p(`<rect class="seg" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
				x0, y, x1-x0, laneH, roleColor(s.role), esc(fmt.Sprintf("r%d %s: %s to %s", id, what, fmtTime(s.from), fmtTime(end))))
			if s.role == "Leader" && x1-x0 >= 22 {
				p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#ffffff" font-weight="bold">e%d</text>`+"\n", (x0+x1)/2, y+laneH/2+4, s.epoch)
			}
		}
		p("</g>\n")
	}

	// Partitions, hatched over the lanes of the cut-off group.
	for _, s := range o.spans {
		for _, id := range s.group {
			y := lane0 + int(id)*(laneH+laneG)
			what := "cut off"
			if s.oneWay {
				what = "cut off one way (its messages out are dropped)"
			}
			p(`<rect class="partition" x="%.1f" y="%d" width="%.1f" height="%d" fill="url(#cut)" stroke="#c0392b" stroke-dasharray="3,2"><title>%s</title></rect>`+"\n",
				x(s.from), y-2, x(s.to)-x(s.from), laneH+4, esc(fmt.Sprintf("r%d %s from %s to %s", id, what, fmtTime(s.from), fmtTime(s.to))))
		}
	}

	// Snapshot installs, on the lane of the replica that installed.
	for _, in := range o.installs {
		cy := float64(lane0+int(in.id)*(laneH+laneG)) + laneH/2
		p(`<polygon class="install" points="%s" fill="%s" stroke="#000000" stroke-width="1"><title>%s</title></polygon>`+"\n",
			diamond(x(in.at), cy, 6), installColor, esc(fmt.Sprintf("r%d installs r%d's snapshot (end offset %d, epoch %d) at %s", in.id, in.from, in.snapshot.Offset, in.snapshot.Epoch, fmtTime(in.at))))
	}

	// Operations: a vertical line from the label's row down through the
	// lanes. A label that finds no free row is left out (the line keeps it
	// as a tooltip).
	for i, m := range o.marks {
		mx := x(m.at)
		col := markColor(m.kind)
		row := labelRow[i]
		top := rowsTop + (row+1)*labelH - 10
		if row < 0 {
			top = lane0 - 6
		}
		p(`<line class="mark" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="4,3"><title>%s</title></line>`+"\n",
			mx, top, mx, lanesEnd+4, col, esc(fmt.Sprintf("%s at %s", m.label, fmtTime(m.at))))
		if row >= 0 {
			p(`<text x="%.1f" y="%d" fill="%s" font-size="11">%s</text>`+"\n", mx+3, rowsTop+(row+1)*labelH, col, esc(m.label))
		}
	}

	// Time axis.
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#000000"/>`+"\n", left, axisY, left+plotW, axisY)
	step := niceStep(total / 10)
	for t := time.Duration(0); t <= total; t += step {
		tx := x(t)
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000000"/>`+"\n", tx, axisY, tx, axisY+5)
		p(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", tx, axisY+18, esc(axisLabel(t)))
	}
	p(`<text x="%d" y="%d" text-anchor="middle" fill="#555555">virtual time</text>`+"\n", left+plotW/2, axisY+34)

	// Legend.
	p(`<g class="legend">` + "\n")
	lx := left
	for _, rc := range roleColors {
		label := rc.role
		p(`<rect x="%d" y="%d" width="14" height="14" fill="%s" stroke="#999999"/><text x="%d" y="%d">%s</text>`+"\n", lx, legendY, rc.color, lx+18, legendY+11, esc(label))
		lx += 26 + 7*len(label) + 10
	}
	p(`<rect x="%d" y="%d" width="14" height="14" fill="url(#cut)" stroke="#c0392b"/><text x="%d" y="%d">cut off by a partition</text>`+"\n", lx, legendY, lx+18, legendY+11)
	lx = left
	ly := legendY + 26
	for _, mc := range markColors {
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="4,3"/><text x="%d" y="%d">%s</text>`+"\n", lx+7, ly, lx+7, ly+14, mc.color, lx+18, ly+11, esc(mc.label))
		lx += 26 + 7*len(mc.label) + 10
	}
	p(`<polygon points="%s" fill="%s" stroke="#000000" stroke-width="1"/><text x="%d" y="%d">snapshot installed</text>`+"\n", diamond(float64(lx+7), float64(ly+7), 6), installColor, lx+18, ly+11)
	lx += 26 + 7*len("snapshot installed") + 10
	p(`<text x="%d" y="%d" fill="#555555">eN: leader of epoch N</text>`+"\n", lx, ly+11)
	p("</g>\n</svg>\n")
	return b.String()
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
