package export

// A self-contained HTML page of a session, for a bug report: no network,
// no external script or font. The calls are written as JSON in chunks of
// <script type="application/json"> (encoding/json escapes <, > and &, so
// nothing in a tape can close the script or run in the page), and the
// page's own script renders only the rows on screen, so a tape of a
// hundred thousand messages stays usable. Every text from the tape goes
// into the page through textContent, never as HTML.

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// htmlCall is a call as the page's script reads it.
type htmlCall struct {
	Req     int     `json:"q"`
	Resp    int     `json:"r"`
	Line    int     `json:"l"`
	Server  string  `json:"sv"`
	From    string  `json:"f,omitempty"` // "server" for a server's own request
	Method  string  `json:"m"`
	Target  string  `json:"t,omitempty"`
	Status  string  `json:"st"`
	Latency float64 `json:"ms"` // -1 when unknown
	Start   string  `json:"at,omitempty"`
	Error   string  `json:"e,omitempty"` // the error, or the failed tool's text
	Request string  `json:"rq"`
	Answer  string  `json:"rs,omitempty"`
}

const htmlChunk = 2000

// HTML writes the tape as one self-contained HTML page.
func HTML(w io.Writer, src Source, version string) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	// The page's one script is allowed by its hash: script injected into
	// the page (were escaping ever to fail) would not run.
	sum := sha256.Sum256([]byte(htmlScript))
	headSrc := strings.Replace(htmlHead, scriptHashMark, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'", 1)
	head := template.Must(template.New("head").Parse(headSrc))
	if err := head.Execute(bw, struct{ Name, Version string }{src.Name, version}); err != nil {
		return err
	}
	r, err := src.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	var chunk []htmlCall
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		b, err := json.Marshal(chunk) // escapes <, > and &: safe inside a script element
		if err != nil {
			return err
		}
		bw.WriteString(`<script type="application/json" class="calls">`)
		bw.Write(b)
		bw.WriteString("</script>\n")
		chunk = chunk[:0]
		return nil
	}
	err = readCalls(r, src.Index, src.Server, tape.CallOptions{}, func(c tape.Call) error {
		chunk = append(chunk, toHTML(c))
		if len(chunk) == htmlChunk {
			return flush()
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	st := tape.ComputeStats(src.Index, src.Server)
	tape.AddContextCosts(&st, src.Index)
	var warnings []string
	for _, wn := range src.Index.Warnings() {
		warnings = append(warnings, wn.Error())
	}
	type table struct {
		Server string     `json:"server"`
		Header []string   `json:"header"`
		Rows   [][]string `json:"rows"`
	}
	var tables []table
	for _, ss := range st.Servers {
		h, rows := ss.Table()
		tables = append(tables, table{ss.Name(), h, rows})
	}
	meta, err := json.Marshal(struct {
		Summary  string   `json:"summary"`
		Tables   []table  `json:"tables"`
		Warnings []string `json:"warnings"`
	}{st.Summary(), tables, warnings})
	if err != nil {
		return err
	}
	bw.WriteString(`<script type="application/json" id="meta">`)
	bw.Write(meta)
	bw.WriteString("</script>\n<script>")
	bw.WriteString(htmlScript)
	bw.WriteString("</script>\n</body>\n</html>\n")
	return bw.Flush()
}

func toHTML(c tape.Call) htmlCall {
	h := htmlCall{Req: c.Request, Resp: c.Response, Line: c.Line, Server: c.Server, Method: c.Method, Target: c.Target, Status: c.Status, Latency: -1, Request: string(c.RequestRaw), Answer: string(c.ResponseRaw)}
	if c.Dir == tape.DirRecv {
		h.From = "server"
	}
	if c.Response >= 0 && !c.Start.IsZero() && !c.End.IsZero() {
		h.Latency = float64(c.Latency) / float64(time.Millisecond)
	}
	if !c.Start.IsZero() {
		h.Start = c.Start.UTC().Format(tape.TimeFormat)
	}
	switch c.Status {
	case "error":
		h.Error = c.ErrorMessage
	case "tool-error":
		for _, it := range gjson.GetBytes(c.ResponseRaw, "result.content").Array() {
			if t := it.Get("text"); t.Exists() {
				h.Error = firstLine(t.String())
				break
			}
		}
	}
	return h
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// scriptHashMark stands in htmlHead for the hash of htmlScript.
const scriptHashMark = "SCRIPT-HASH"

const htmlHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src SCRIPT-HASH; style-src 'unsafe-inline'">
<title>{{.Name}} · tapedeck</title>
<style>
body{margin:0;font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:#1f2328;background:#fff}
header{padding:8px 12px;border-bottom:1px solid #d0d7de;display:flex;gap:12px;align-items:center;flex-wrap:wrap}
header h1{font-size:15px;margin:0}
#search{width:28em;padding:3px 6px;font:inherit}
button{font:inherit;padding:2px 8px}
main{display:flex;height:calc(100vh - 48px)}
#list{flex:1 1 55%;min-width:0;overflow-y:auto;position:relative;border-right:1px solid #d0d7de}
#spacer{position:relative}
.row{position:absolute;left:0;right:0;height:22px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding:0 8px;cursor:pointer;border-bottom:1px solid #f0f2f4}
.row.sel{background:#ddf4ff}
.row.fail{color:#cf222e}
.row .st{display:inline-block;width:7em}
.row .ms{display:inline-block;width:6em;text-align:right;margin-right:1em;color:#57606a}
#side{flex:1 1 45%;min-width:0;overflow:auto;padding:8px 12px}
pre{margin:4px 0 12px;white-space:pre-wrap;word-break:break-all;background:#f6f8fa;padding:6px}
.k{color:#0550ae}.s{color:#0a3069}.n{color:#953800}.b{color:#8250df}
details summary{cursor:pointer;font-weight:bold;margin-top:8px}
table{border-collapse:collapse;margin:4px 0 12px;max-width:100%}td,th{border:1px solid #d0d7de;padding:1px 4px;text-align:left}
#side table{font-size:12px}#side td:first-child{overflow-wrap:anywhere}#side th,#side td+td{white-space:nowrap}
.warn{color:#9a6700}
#count{color:#57606a}
</style>
</head>
<body>
<header><h1>{{.Name}}</h1><input id="search" type="search" placeholder="search: method, tool, text in the messages" autocomplete="off"><button id="nextfail" type="button">next failure</button><span id="count"></span><span id="gen">tapedeck {{.Version}}</span></header>
<main><div id="list"><div id="spacer"></div></div><div id="side"><p>Select a call to see its request and answer.</p></div></main>
`

// htmlScript renders the page: the list is virtual (only the rows on
// screen, plus a margin, are in the document), the search filters on the
// method, the target and the messages' text, #q=TEXT fills the search and
// #call=N selects a call, for links and for tests.
const htmlScript = `
(function(){
"use strict";
// The first chunk is read at once and drawn; the others are read a chunk
// at a time in the background, so the first screen does not wait for a
// long tape.
var chunks=Array.prototype.slice.call(document.querySelectorAll('script.calls')), calls=[], loaded=false;
function take(){var s=chunks.shift();if(s){Array.prototype.push.apply(calls,JSON.parse(s.textContent));}}
take();
var meta=JSON.parse(document.getElementById('meta').textContent);
var H=22, list=document.getElementById('list'), spacer=document.getElementById('spacer'), side=document.getElementById('side');
var search=document.getElementById('search'), count=document.getElementById('count');
var shown=calls, sel=-1;
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!==undefined)e.textContent=text;return e;}
function failed(c){return c.st==='error'||c.st==='tool-error';}
function label(c){return '#'+c.q+' '+(c.f==='server'?'← ':'')+c.m+(c.t?' '+c.t:'');}
function render(){
  spacer.style.height=(shown.length*H)+'px';
  var top=list.scrollTop, from=Math.max(0,Math.floor(top/H)-20), to=Math.min(shown.length,Math.ceil((top+list.clientHeight)/H)+20);
  if(list.clientHeight===0){to=Math.min(shown.length,from+60);}
  while(spacer.firstChild)spacer.removeChild(spacer.firstChild);
  for(var i=from;i<to;i++){
    var c=shown[i], r=el('div','row'+(failed(c)?' fail':'')+(c.q===sel?' sel':''));
    r.style.top=(i*H)+'px'; r.dataset.call=c.q;
    r.appendChild(el('span','st',c.st));
    r.appendChild(el('span','ms',c.ms>=0?c.ms.toFixed(1)+'ms':''));
    r.appendChild(el('span','lbl',label(c)+(c.e?' — '+c.e:'')+(c.sv&&meta.tables.length>1?'  ['+c.sv+']':'')));
    spacer.appendChild(r);
  }
  count.textContent=shown.length+' of '+calls.length+' calls';
}
function pretty(text){
  var pre=el('pre');
  var v;try{v=JSON.parse(text);}catch(e){pre.textContent=text;return pre;}
  (function walk(x,ind,out){
    if(x===null){out.appendChild(el('span','b','null'));return;}
    if(Array.isArray(x)){if(!x.length){out.appendChild(document.createTextNode('[]'));return;}
      out.appendChild(document.createTextNode('[\n'));
      x.forEach(function(y,i){out.appendChild(document.createTextNode(ind+'  '));walk(y,ind+'  ',out);out.appendChild(document.createTextNode(i<x.length-1?',\n':'\n'));});
      out.appendChild(document.createTextNode(ind+']'));return;}
    if(typeof x==='object'){var ks=Object.keys(x);if(!ks.length){out.appendChild(document.createTextNode('{}'));return;}
      out.appendChild(document.createTextNode('{\n'));
      ks.forEach(function(k,i){out.appendChild(document.createTextNode(ind+'  '));out.appendChild(el('span','k',JSON.stringify(k)));out.appendChild(document.createTextNode(': '));walk(x[k],ind+'  ',out);out.appendChild(document.createTextNode(i<ks.length-1?',\n':'\n'));});
      out.appendChild(document.createTextNode(ind+'}'));return;}
    out.appendChild(el('span',typeof x==='string'?'s':(typeof x==='number'?'n':'b'),JSON.stringify(x)));
  })(v,'',pre);
  return pre;
}
function show(q){
  sel=q; var c=null;
  for(var i=0;i<calls.length;i++){if(calls[i].q===q){c=calls[i];break;}}
  while(side.firstChild)side.removeChild(side.firstChild);
  if(!c){side.appendChild(el('p',null,'no call #'+q));return;}
  side.appendChild(el('h2','call'+(failed(c)?' fail':''),label(c)));
  side.appendChild(el('p',null,'status '+c.st+(c.ms>=0?' · '+c.ms.toFixed(1)+' ms':'')+(c.at?' · at '+c.at:'')+' · tape line '+c.l+(c.sv?' · server '+c.sv:'')));
  if(c.e)side.appendChild(el('p','error fail',c.e));
  var d1=el('details');d1.open=true;d1.appendChild(el('summary',null,'request #'+c.q));d1.appendChild(pretty(c.rq));side.appendChild(d1);
  var d2=el('details');d2.open=true;d2.appendChild(el('summary',null,c.r>=0?'answer #'+c.r:'no answer on the tape'));if(c.rs)d2.appendChild(pretty(c.rs));side.appendChild(d2);
  render();
}
function stats(){
  side.appendChild(el('h2',null,'stats'));
  side.appendChild(el('p',null,meta.summary));
  meta.tables.forEach(function(t){
    side.appendChild(el('h3',null,'server '+t.server));
    var tb=el('table'), tr=el('tr');
    t.header.forEach(function(h){tr.appendChild(el('th',null,h));});tb.appendChild(tr);
    t.rows.forEach(function(r){var tr=el('tr');r.forEach(function(c){tr.appendChild(el('td',null,c));});tb.appendChild(tr);});
    side.appendChild(tb);
  });
  if(meta.warnings&&meta.warnings.length){side.appendChild(el('h3',null,'warnings'));meta.warnings.forEach(function(w){side.appendChild(el('p','warn',w));});}
}
function filter(){
  var q=search.value.trim().toLowerCase();
  shown=!q?calls:calls.filter(function(c){return (c.m+' '+(c.t||'')+' '+c.st+' '+(c.e||'')+' '+c.rq+' '+(c.rs||'')).toLowerCase().indexOf(q)>=0;});
  list.scrollTop=0; render();
}
search.addEventListener('input',filter);
list.addEventListener('scroll',render);
window.addEventListener('resize',render);
list.addEventListener('click',function(ev){var r=ev.target.closest('.row');if(r)show(+r.dataset.call);});
document.getElementById('nextfail').addEventListener('click',function(){
  for(var i=0;i<shown.length;i++){var c=shown[i];if(failed(c)&&c.q>sel){show(c.q);list.scrollTop=Math.max(0,i*H-list.clientHeight/2);render();return;}}
});
var h=new URLSearchParams(location.hash.slice(1));
function done(){
  loaded=true;
  calls.sort(function(a,b){return a.q-b.q;});
  if(h.get('q')){search.value=h.get('q');}
  filter();
  if(h.get('call')){show(+h.get('call'));}
}
function more(){
  var t=Date.now();
  while(chunks.length&&Date.now()-t<40){take();}
  if(chunks.length){count.textContent=calls.length+' calls read…';setTimeout(more,0);}else{done();}
}
render();
stats();
// When the first screen was drawn, for a benchmark to read.
document.body.dataset.firstScreenMs=Math.round(performance.now());
if(chunks.length){setTimeout(more,0);}else{done();}
})();
`
