/*
 * The page around the drawing: the SVG element (inside an HTML document
 * unless plain SVG was asked for), the style sheet, and for HTML the
 * script that zooms and folds rows.
 */
#include <inttypes.h>

#include "output/html_draw.h"

/* Colours of message tags. */
static const uint32_t tag_rgb[] = {0x000000, 0xd40000, 0x0066cc, 0x009933,
                                   0xcc6600, 0x9900cc, 0x666666, 0xcc0099};

static void
page_style(const hw_canvas *d)
{
	fputs("<style>\ntext{font:11px sans-serif;fill:#222}\n"
	      ".h1{font:bold 15px sans-serif}\n"
	      ".h2{font:bold 11px sans-serif}\n"
	      ".ax line{stroke:#ddd;stroke-width:1}\n"
	      ".ax text{font-size:10px;fill:#555}\n"
	      ".sep{stroke:#bbb;stroke-width:1}\n"
	      "line[class^=m]{stroke-width:1.2}\n"
	      ".mx{stroke:#888}\n"
	      ".fn{fill:none;stroke:#111;stroke-width:.8}\n"
	      ".uf{stroke:#7a4b00;stroke-dasharray:3 1}\n"
	      ".fl,.el{font:9px sans-serif;pointer-events:none;"
	      "paint-order:stroke;stroke:#fff;stroke-width:2.5px}\n"
	      ".fl{fill:#000}.el{fill:#a00}\n"
	      ".ev{fill:#e00;stroke:#fff;stroke-width:.6}\n"
	      ".btn{fill:#0645ad;cursor:pointer;text-decoration:underline}\n",
	      d->f);
	for (size_t i = 0; i < d->nshown; i++) {
		uint32_t c = hw_state_rgb(d, d->shown[i]);

		fprintf(d->f, ".s%u{fill:#%06x}\n", d->shown[i], c & 0xffffff);
	}
	for (int t = 0; t < 8; t++)
		fprintf(d->f, ".m%d{stroke:#%06x}\n", t, tag_rgb[t]);
	fputs("</style>\n<defs>\n", d->f);
	/* Arrowheads, one per message colour: a line ends at its receive. */
	for (int t = 0; t <= 8; t++)
		fprintf(
		    d->f,
		    "<marker id=\"a%c\" viewBox=\"0 0 10 10\" refX=\"10\" "
		    "refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
		    "markerUnits=\"userSpaceOnUse\" orient=\"auto\">"
		    "<path d=\"M0,0L10,5L0,10z\" fill=\"#%06x\"/></marker>\n",
		    t < 8 ? '0' + t : 'x', t < 8 ? tag_rgb[t] : 0x888888);
	fputs("</defs>\n", d->f);
}

static const char script[] =
    "<script>\n"
    "(function(){\n"
    "var svg=document.getElementById('tl'),z=document.getElementById('zoom'),"
    "ax=document.getElementById('axis'),cur=document.getElementById('cursor'),"
    "sel=document.getElementById('sel'),leg=document.getElementById('legend'),"
    "fold=document.getElementById('fold'),clip=document.getElementById("
    "'cliprect'),bg=document.getElementById('bg'),sg=document.getElementById("
    "'seps');\n"
    "var D=svg.dataset,X=+D.x,W=+D.w,T0=+D.from,T1=+D.to,TOP=+D.top,PI=+D."
    "pitch,RH=+D.rowh,M=+D.margin,H0=+D.height,B0=+D.bottom;\n"
    "var P=W,v0=0,v1=W,down=null,all=false,BOT=B0,WD=X+W+M,H=H0,Y=[];\n"
    "function q(s){return Array.prototype.slice.call(svg.querySelectorAll(s));}"
    "\n"
    "var names=q('text.rn'),rows=q('g.row'),xs=q('[data-a]');\n"
    "function vis(e,b){e.setAttribute('display',b?'inline':'none');}\n"
    "function size(){svg.setAttribute('width',WD);svg.setAttribute('height',H);"
    "svg.setAttribute('viewBox','0 0 '+WD+' '+H);bg.setAttribute('width',WD);"
    "bg.setAttribute('height',H);clip.setAttribute('width',P);if(cur)cur."
    "setAttribute('x',WD-M);if(fold)fold.setAttribute('x',WD-M);}\n"
    "function layout(){var n=0,s='',lt=null;\n"
    " names.forEach(function(t){var r=+t.dataset.r,show=all||!fold||t.dataset."
    "idle!=='1';Y[r]=show?TOP+PI*n++:-1;vis(t,show);if(show){t.setAttribute("
    "'y',Y[r]+RH-3);if(lt!==null&&t.dataset.k!==lt)s+='<line class=\"sep\" "
    "x1=\"8\" y1=\"'+(Y[r]-2)+'\" x2=\"'+(X+P)+'\" y2=\"'+(Y[r]-2)+'\"/>';lt="
    "t.dataset.k;}});\n"
    " BOT=TOP+n*PI;sg.innerHTML=s;\n"
    " rows.forEach(function(g){var y=Y[+g.dataset.r];vis(g,y>=0);g."
    "setAttribute('transform','translate(0,'+Math.max(y,0)+')');});\n"
    " xs.forEach(function(e){var c=e.tagName,y;if(c==='line'){var f=Y[+e."
    "dataset.f],t=Y[+e.dataset.t];vis(e,f>=0&&t>=0);e.setAttribute('y1',f+RH/"
    "2);e.setAttribute('y2',t+RH/2);return;}y=Y[+e.dataset.r];vis(e,y>=0);if("
    "y<0)return;if(c==='rect')e.setAttribute('y',y);else if(c==='text')e."
    "setAttribute('y',y+RH-4);else e.dataset.y=y+5;});\n"
    " clip.setAttribute('height',BOT-TOP+8);sel.setAttribute('height',BOT-TOP+"
    "4);leg.setAttribute('transform','translate(0,'+(BOT-B0)+')');H=H0+BOT-B0;"
    "\n"
    " if(fold)fold.textContent=(all?'\\u25be ':'\\u25b8 ')+fold.dataset.n+' "
    "row'+(fold.dataset.n==='1'?'':'s')+' idle the whole range '+(all?'shown: "
    "click to fold':'folded: click to show');size();}\n"
    "function tm(p){return T0+(v0+p/P*(v1-v0))/W*(T1-T0);}\n"
    "function unit(ns){return ns>=1e9?[1e9,'s']:ns>=1e6?[1e6,'ms']:ns>=1e3?"
    "[1e3,'\\u00b5s']:[1,'ns'];}\n"
    "function fmt(t,step,top){var u=unit(top),r=step/u[0],d=r>=1?0:Math.min("
    "6,Math.ceil(-Math.log10(r)));return (t/u[0]).toFixed(d)+' '+u[1];}\n"
    "function axis(){var a=tm(0),b=tm(P),raw=(b-a)/8,p=Math.pow(10,"
    "Math.floor(Math.log10(raw))),m=raw/p,step=(m<1.5?1:m<3.5?2:m<7.5?5:10)"
    "*p,s='';\n"
    " for(var t=Math.ceil(a/step)*step;t<=b+step*1e-9;t+=step){var x=X+(t-a)"
    "/(b-a)*P;s+='<line x1=\"'+x+'\" y1=\"'+(TOP-6)+'\" x2=\"'+x+'\" y2=\"'"
    "+BOT+'\"/><text x=\"'+x+'\" y=\"'+(TOP-10)+'\" text-anchor=\"middle\">'"
    "+fmt(t,step,b)+'</text>';}\n"
    " ax.innerHTML=s;}\n"
    "function place(){var k=P/(v1-v0);z.setAttribute('transform','translate('"
    "+(X-v0*k)+',0) scale('+k+',1)');\n"
    " xs.forEach(function(e){var c=e.tagName,a=X+(+e.dataset.a-v0)*k,b="
    "e.dataset.b===undefined?a:X+(+e.dataset.b-v0)*k;\n"
    "  if(c==='line'){e.setAttribute('x1',a);e.setAttribute('x2',b);}else if(c"
    "==='rect'){e.setAttribute('x',a);e.setAttribute('width',Math.max(b-a,.5)"
    ");}else if(c==='text'){var fl=e.getAttribute('class')==='fl';e."
    "setAttribute('x',fl?a+2:a);e.setAttribute('visibility',b-a>=(fl?+e."
    "dataset.n*6+4:36)?'visible':'hidden');}else e.setAttribute('transform',"
    "'translate('+a+','+(e.dataset.y||0)+')');});\n"
    " axis();}\n"
    "function resize(){WD=Math.max(document.documentElement.clientWidth||"
    "window.innerWidth,X+M+200);P=WD-X-M;size();layout();place();}\n"
    "function px(e){var p=svg.createSVGPoint();p.x=e.clientX;p.y=e.clientY;"
    "return p.matrixTransform(svg.getScreenCTM().inverse()).x-X;}\n"
    "svg.addEventListener('mousedown',function(e){var p=px(e);if(p>=0&&p<=P)"
    "{down=p;e.preventDefault();}});\n"
    "svg.addEventListener('mousemove',function(e){var p=px(e);if(p<0||p>P)"
    "return;if(cur)cur.textContent=fmt(tm(p),(tm(P)-tm(0))/P,tm(P));if(down!=="
    "null){sel.setAttribute('x',X+Math.min(p,down));sel.setAttribute('width',"
    "Math.abs(p-down));sel.setAttribute('visibility','visible');}});\n"
    "svg.addEventListener('mouseup',function(e){if(down===null)return;var p="
    "Math.max(0,Math.min(P,px(e)));if(Math.abs(p-down)>3){var a=Math.min(p,"
    "down),b=Math.max(p,down),n0=v0+a/P*(v1-v0),n1=v0+b/P*(v1-v0);v0=n0;v1="
    "n1;place();}down=null;sel.setAttribute('visibility','hidden');});\n"
    "svg.addEventListener('dblclick',function(){v0=0;v1=W;place();});\n"
    "if(fold)fold.addEventListener('click',function(e){all=!all;layout();"
    "place();e.stopPropagation();});\n"
    "window.addEventListener('resize',resize);resize();\n"
    "})();\n"
    "</script>\n";

void
hw_page_open(const hw_canvas *d)
{
	if (d->h->svg)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
		      "xmlns=\"http://www.w3.org/2000/svg\"",
		      d->f);
	else
		fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta "
		      "charset=\"utf-8\"><title>",
		      d->f);
	if (!d->h->svg) {
		hw_esc(d->f, d->info->program && d->info->program[0]
		                 ? d->info->program
		                 : "trace");
		fputs(" \xe2\x80\x94 dwork "
		      "timeline</title>\n<style>body{margin:0;"
		      "background:#fff}svg{display:block}</style></"
		      "head>\n<body>\n<svg",
		      d->f);
	}
	fprintf(d->f,
	        " id=\"tl\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
	        "data-x=\"%u\" data-w=\"%u\" data-from=\"%" PRIu64
	        "\" data-to=\"%" PRIu64
	        "\" data-top=\"%u\" data-bottom=\"%u\" data-pitch=\"%u\" "
	        "data-rowh=\"%u\" data-margin=\"%u\" data-height=\"%u\">\n",
	        d->width, d->height, d->width, d->height, HW_PLOT_X,
	        d->h->width, d->h->from, d->h->to, HW_TOP, d->bottom, HW_PITCH,
	        HW_ROW_H, HW_MARGIN, d->height);
	fprintf(d->f,
	        "<rect id=\"bg\" width=\"%u\" height=\"%u\" fill=\"#fff\"/>\n",
	        d->width, d->height);
	page_style(d);
}

void
hw_page_close(const hw_canvas *d)
{
	fputs("</svg>\n", d->f);
	if (!d->h->svg)
		fprintf(d->f, "%s</body>\n</html>\n", script);
}
