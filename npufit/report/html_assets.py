"""The CSS and JS every HTML page inlines (nothing is fetched when a page is viewed). With JS off the tables,
the graph as drawn and its side panel still read; the JS adds the graph viewer (html_graph) and table filters."""

from __future__ import annotations

CSS = """
:root{--fg:#1f2933;--muted:#52606d;--line:#e4e7eb;--bg:#f5f7fa;--card:#fff;--accent:#1f6feb}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 color:var(--fg);background:var(--bg)}
header{background:#1f2933;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px;overflow-wrap:break-word}
 header .sub{color:#cbd2d9;margin-top:4px;overflow-wrap:anywhere}
main{padding:18px 28px;max-width:1600px}section{background:var(--card);border:1px solid var(--line);border-radius:8px;
 padding:16px 20px;margin:0 0 18px}
h2{font-size:18px;margin:0 0 10px}h3{font-size:15px;margin:16px 0 8px}h4{font-size:14px;margin:12px 0 6px;
 color:var(--muted)}h5{font-size:13px;margin:10px 0 4px}
.tablewrap{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}th,td{border-bottom:1px solid var(--line);
 padding:5px 10px;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#f0f4f8;font-weight:600;position:sticky;top:0}td.num,th.num{text-align:right;
 font-variant-numeric:tabular-nums;white-space:nowrap}
table.kv td:first-child{font-weight:600;white-space:nowrap;color:var(--muted)}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:6px 0 12px}.card{border:1px solid var(--line);border-radius:6px;
 padding:8px 14px;min-width:120px;max-width:100%;background:#fbfcfd}
.card .v{font-size:20px;font-weight:650;overflow-wrap:break-word}.card .k{color:var(--muted);font-size:12px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;
 white-space:nowrap}
.v-npu{--c:#2e9d57}.v-cpu{--c:#d9a400}.v-unsupported{--c:#d64545}.v-folded{--c:#9aa0a6}
 .badge.v-npu,.badge.v-cpu,.badge.v-unsupported,.badge.v-folded{background:var(--c)}
.st-ok,.st-ran{color:#2e9d57;font-weight:600}[class^=st-]{white-space:nowrap}.st-failed{color:#d64545;font-weight:600}
 .st-skipped{color:#b7791f}.st-rejected{color:#8854d0;font-weight:600}.st-cached,.st-kept{color:#3867d6}
.note{color:var(--muted)}.warn{color:#b7791f}.err{color:#d64545}.ok{color:#2e9d57}code{background:#f0f4f8;
 padding:0 4px;border-radius:3px;overflow-wrap:break-word}
details>summary{cursor:pointer;font-weight:600;margin:6px 0}details.more{display:inline}details.more>summary{
 font-weight:inherit;margin:0;display:inline}
details.more[open]>summary{display:none}details.more>summary::marker{content:""}details.more>summary::after{
 content:" (more)";color:var(--accent);font-size:12px}
.filter{display:none;margin:4px 0 6px;padding:4px 8px;border:1px solid var(--line);border-radius:4px;width:260px}
.js .filter{display:inline-block}
.grid2{display:flex;flex-wrap:wrap;gap:18px}nav a{margin-right:14px;color:#cbd2d9}.times{color:var(--muted);
 font-weight:600}
.legend{margin:6px 0;color:var(--muted)}.chip{display:inline-block;width:12px;height:12px;border-radius:3px;
 margin:0 4px 0 10px;vertical-align:-1px}
.chip.dashed{border:1.5px dashed #1f2933;background:#2e9d57}.cutchip{color:#d64545;margin-left:12px}
svg.chart text{font-size:12px;fill:#3e4c59}svg.chart .ctitle{font-weight:650;font-size:13px}svg.chart .blabel{
 text-anchor:end}
svg.chart .plotbg{fill:#fbfcfd;stroke:#e4e7eb}svg.chart .grid{stroke:#e4e7eb}
ul.why,ul.fix{margin:2px 0;padding-left:18px}ul.why li,ul.fix li{margin:2px 0}.detail{color:var(--muted)}code.rule{
 font-size:11px;color:var(--muted)}
.nodes a{white-space:nowrap}
/* graph view */
.gtools{display:none;flex-wrap:wrap;gap:4px;align-items:center;margin:6px 0}.js .gtools{display:flex}
.gtools .gsearch{padding:4px 8px;border:1px solid #9aa5b1;border-radius:4px;width:280px;font-size:14px}
 .gtools .gcount{color:var(--muted);min-width:70px;font-size:13px}
.gtools button{font-size:13px;padding:3px 9px}.gtools .gap{width:14px}
.gwrap{display:flex;gap:12px;align-items:flex-start}
.graphbox{flex:1 1 auto;min-width:0;overflow:auto;max-height:75vh;border:1px solid var(--line);border-radius:6px;
 background:#fcfdfe}
.gpanel{flex:0 0 360px;max-height:75vh;overflow:auto;border:1px solid var(--line);border-radius:6px;padding:8px 12px;
 background:#fbfcfd;font-size:13px}
.gpanel .sel-name{font-weight:650;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;
 overflow-wrap:anywhere;margin:2px 0}
.gpanel p{margin:4px 0}.gpanel .verdict{color:var(--c);font-weight:600}.gpanel .verdict.v-cpu{color:#9a6b00}
.plist{margin:0;padding-left:26px}.plist li{margin:1px 0}.plist a{color:var(--fg);text-decoration:none;
 border-left:4px solid var(--c);padding-left:5px;display:block}
.plist a:hover,.plist a.on{background:#e6efff}.plist .nm{color:var(--muted);font-size:12px;overflow-wrap:anywhere}
@media (max-width:1000px){.gwrap{flex-direction:column}.gpanel{flex:none;width:100%;max-height:none}.graphbox{
 width:100%}}
svg.graph{display:block;margin:0 auto}svg.graph .edge{fill:none;stroke:#9aa5b1;stroke-width:1.3}svg.graph .edge.cut{
 stroke:#d64545;stroke-width:2.4;stroke-dasharray:6 4}
svg.graph .node .box{stroke:#1f2933;stroke-opacity:.25}svg.graph .node.v-io .box{fill:#e8ecef}
svg.graph text{text-anchor:middle;font-size:10px;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
svg.graph .op{font-weight:650;font-size:12px}svg.graph .cut-mark circle{fill:#fff;stroke:#d64545;stroke-width:2}
svg.graph .cut-mark text{fill:#d64545;font-size:12px;text-anchor:middle}svg.graph .node{cursor:pointer}
svg.graph .node:hover .box{stroke-opacity:1;stroke-width:2}svg.graph .node.group .box{stroke-dasharray:5 3;
 stroke-opacity:.9}
svg.graph .node.hit>.box,svg.graph .row.hit rect{stroke:#f7b731;stroke-width:4;stroke-opacity:1}
svg.graph .node.sel>.box,svg.graph .row.sel rect{stroke:#1f6feb;stroke-width:4;stroke-opacity:1}
svg.graph .bandlabel{text-anchor:start;font-size:10px;fill:#3e4c59}
svg.graph .farlabel{text-anchor:end;font-size:10px;fill:#3e4c59;paint-order:stroke;stroke:#fcfdfe;stroke-width:3px}
svg.graph .far.cut .farlabel{fill:#d64545}svg.graph a.far:hover .farlabel{fill:#1f6feb;text-decoration:underline}
svg.graph .rows{display:none}svg.graph .node.open .rows{display:inline}
svg.graph .row rect{fill:#f3faf5;stroke:#c9e5d2}svg.graph .row text{text-anchor:start;fill:#1f2933;font-size:10px}
 svg.graph .row .rop{font-weight:650}
"""

GRAPH_JS = r"""
function npufitGraph(view){
 var svg=view.querySelector('svg.graph'),box=view.querySelector('.graphbox'),panel=view.querySelector('.gpanel');
 if(!svg)return null;
 var g=svg.dataset.geo.split(',').map(Number),W=g[0],H=g[1],GX=g[2],GY=g[3],PAD=g[4],RH=g[5];
 var words=JSON.parse(panel.dataset.verdicts||'{}');
 var VW=+svg.dataset.w,VH=+svg.getAttribute('height'),scale=1,cur=null,top=[],lh=[];
 var boxes=[].slice.call(svg.querySelectorAll('g.node')),edges=[].slice.call(svg.querySelectorAll('path.edge[data-s]'));
 var byId={};boxes.forEach(function(b){byId[b.id]=b;});
 var targets=[].slice.call(svg.querySelectorAll('[data-node]'));
 function hOf(b){return b.classList.contains('open')?H+b.querySelectorAll('g.row').length*RH+4:H;}
 function path(p){var d='M'+p[0][0]+','+p[0][1];for(var i=1;i<p.length;i++){var a=p[i-1],b=p[i];
  if(i%2){var cy=(a[1]+b[1])/2;d+=' C'+a[0]+','+cy+' '+b[0]+','+cy+' '+b[0]+','+b[1];}else{d+=' L'+b[0]+','+b[1];}}
 return d;}
 function size(){svg.setAttribute('viewBox','0 0 '+VW+' '+VH);svg.setAttribute('width',VW*scale);
 svg.setAttribute('height',VH*scale);
  var z=view.querySelector('.zlabel');if(z)z.textContent=Math.round(scale*100)+'%';}
 function relayout(){lh=[];boxes.forEach(function(b){var l=+b.dataset.l;lh[l]=Math.max(lh[l]||H,hOf(b));});
  top=[];var y=PAD;for(var l=0;l<lh.length;l++){lh[l]=lh[l]||H;top[l]=y;y+=lh[l]+GY;}VH=y-GY+PAD;
  boxes.forEach(function(b){var h=hOf(b);
 b.setAttribute('transform','translate('+b.dataset.x+','+top[+b.dataset.l]+')');
   b.querySelector('rect.box').setAttribute('height',h);var band=b.querySelector('rect.band');
 if(band)band.setAttribute('height',h+GY-6);});
  edges.forEach(function(e){var s=byId[e.dataset.s],t=byId[e.dataset.t],sl=+s.dataset.l;
   var p=[[+s.dataset.x+W/2,top[sl]+hOf(s)]];
   (e.dataset.d?e.dataset.d.split(' '):[]).forEach(function(x,i){var l=sl+1+i;p.push([+x,top[l]],[+x,top[l]+lh[l]]);}
 );
   p.push([+t.dataset.x+W/2,top[+t.dataset.l]]);e.setAttribute('d',path(p));
   if(e.dataset.m){var m=document.getElementById(e.dataset.m);
    if(m)m.setAttribute('transform','translate('+(p[0][0]+p[1][0])/2+','+(p[0][1]+p[1][1])/2+')');}});
  size();}
 function owner(el){return el.classList.contains('row')?el.parentNode.parentNode:el;}
 function open(b,on){if(b.classList.contains('open')===on)return;b.classList.toggle('open',on);
  var s=b.querySelector('text.nm');
 if(s)s.textContent=s.textContent.replace(on?'open ▾':'close ▴',on?'close ▴':'open ▾');relayout();}
 function center(el){var r=el.getBoundingClientRect(),b=box.getBoundingClientRect();
  box.scrollLeft+=r.left+r.width/2-(b.left+box.clientWidth/2);
 box.scrollTop+=r.top+Math.min(r.height,H*scale)/2-(b.top+box.clientHeight/2);}
 function line(cls,text){var p=document.createElement('p');if(cls)p.className=cls;p.textContent=text;return p;}
 function show(el){var sel=panel.querySelector('.sel'),x=panel.querySelector('.sel-extra');sel.textContent='';
 x.textContent='';
  var o=owner(el),v=(o.className.baseVal.match(/v-(\w+)/)||[])[1]||'';
  if(el.dataset.group){sel.appendChild(line('sel-name','A chain of '+el.dataset.group+' nodes, all on the NPU'));
   sel.appendChild(line('','partition '+el.dataset.p+'. Its nodes are listed in the box when it is open.'));
   var bt=document.createElement('button');bt.type='button';
 bt.textContent=el.classList.contains('open')?'fold':'open';
   bt.onclick=function(){open(el,!el.classList.contains('open'));show(el);};x.appendChild(bt);}
  else{sel.appendChild(line('sel-name',el.dataset.node));
   var p=document.createElement('p'),b=document.createElement('b');b.textContent=el.dataset.op;p.appendChild(b);
   if(v&&v!=='io'){var s=document.createElement('span');s.className='verdict v-'+v;
    s.textContent=' · '+(words[v]||v);p.appendChild(s);}
   if(el.dataset.shape)p.appendChild(document.createTextNode(' '+el.dataset.shape));
   if(o.dataset.p!==undefined)
    p.appendChild(document.createTextNode(' · partition '+o.dataset.p+(o.dataset.dev==='host'?' (host)':'')));
   sel.appendChild(p);}
  panel.querySelectorAll('.why-block').forEach(function(w){
 w.hidden=!(el.dataset.r!==undefined&&w.dataset.r===el.dataset.r);});
  panel.querySelectorAll('.plist a').forEach(function(a){a.classList.toggle('on',a.getAttribute('href')==='#'+el.id);}
 );}
 function select(el,scroll){if(cur)cur.classList.remove('sel');cur=el;el.classList.add('sel');
  var o=owner(el);if(o!==el)open(o,true);show(el);if(scroll!==false)center(el);}
 function zoom(s){var cx=(box.scrollLeft+box.clientWidth/2)/scale,cy=(box.scrollTop+box.clientHeight/2)/scale;
  scale=Math.max(0.1,Math.min(3,s));size();box.scrollLeft=cx*scale-box.clientWidth/2;
 box.scrollTop=cy*scale-box.clientHeight/2;}
 var hits=[],hi=-1,inp=view.querySelector('.gsearch'),cnt=view.querySelector('.gcount');
 function find(q){hits.forEach(function(h){owner(h).classList.remove('hit');h.classList.remove('hit');});hits=[];
 hi=-1;
  q=q.trim().toLowerCase();if(q)hits=targets.filter(function(t){
 return t.dataset.node.toLowerCase().indexOf(q)>=0||(t.dataset.op||'').toLowerCase().indexOf(q)>=0;});
  hits.forEach(function(h){h.classList.add('hit');owner(h).classList.add('hit');});
  cnt.textContent=q?(hits.length?hits.length+' found':'no match'):'';if(hits.length)step(1);}
 function step(d){if(!hits.length)return;hi=(hi+d+hits.length)%hits.length;cnt.textContent=(hi+1)+' of '+hits.length;
 select(hits[hi]);}
 if(inp){inp.addEventListener('input',function(){find(inp.value);});
  inp.addEventListener('keydown',function(e){if(e.key==='Enter'){e.preventDefault();step(e.shiftKey?-1:1);}});}
 function first(){var p=svg.querySelector('.node.problem');if(p)select(p);}
 view.querySelectorAll('.gtools button').forEach(function(b){b.addEventListener('click',function(){
 var a=b.dataset.act;
  if(a==='next')step(1);else if(a==='prev')step(-1);else if(a==='first')first();
  else if(a==='in')zoom(scale*1.25);else if(a==='out')zoom(scale/1.25);else if(a==='100')zoom(1);
  else if(a==='fit')zoom(Math.min(1,box.clientWidth/VW,box.clientHeight/VH));
  else if(a==='open-all'||a==='close-all'){svg.querySelectorAll('.node.group').forEach(function(n){
 n.classList.toggle('open',a==='open-all');
   var s=n.querySelector('text.nm');
 if(s)s.textContent=s.textContent.replace(a==='open-all'?'open ▾':'close ▴',a==='open-all'?'close ▴':'open ▾');});
 relayout();if(cur)center(cur);}});});
 svg.addEventListener('click',function(e){if(e.target.closest('a'))return;var r=e.target.closest('g.row');
  if(r){select(r,false);return;}var t=e.target.closest('g.node');if(!t)return;
  if(t.dataset.group)open(t,!t.classList.contains('open'));select(t,false);});
 first();
 return {select:select,find:find};
}
"""

JS = (
    r"""
document.documentElement.classList.add('js');
window.__npufitErrors=[];window.addEventListener('error',function(e){window.__npufitErrors.push(String(e.message));
 var p=document.getElementById('js-errors');if(p){p.textContent=window.__npufitErrors.join('\n');}});
"""
    + GRAPH_JS
    + r"""
document.addEventListener('DOMContentLoaded',function(){
 document.querySelectorAll('input.filter').forEach(function(inp){
  var t=document.getElementById(inp.dataset.table);if(!t)return;
  inp.addEventListener('input',function(){var q=inp.value.toLowerCase();
   t.querySelectorAll('tbody tr').forEach(function(r){
 r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});});
 var graphs=new Map();document.querySelectorAll('.gview').forEach(function(v){var g=npufitGraph(v);
 if(g)graphs.set(v,g);});
 document.addEventListener('click',function(e){var a=e.target.closest('a[href^="#"]');if(!a)return;
  var el=document.getElementById(decodeURIComponent(a.getAttribute('href').slice(1)));if(!el||!el.closest)return;
  var v=el.closest('.gview');if(!v||!graphs.has(v))return;e.preventDefault();
  var r=v.getBoundingClientRect();if(r.top<0||r.bottom>window.innerHeight)v.scrollIntoView({block:'start'});
  graphs.get(v).select(el);});
 document.body.setAttribute('data-ready','1');
});
"""
)
