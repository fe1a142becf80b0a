#ifndef CXML_H
#define CXML_H

/* Whether an XML document has a document type declaration (<!DOCTYPE ...>), as libxml2's own
 * parser finds it: 1 (with the line libxml2 was on), 0 for none, -1 when the parser could not
 * start. The parse stops at the declaration: nothing of it is read further, no entity is
 * substituted (no XML_PARSE_NOENT), no external subset loaded (no XML_PARSE_DTDLOAD), nothing
 * fetched (XML_PARSE_NONET). */
int cxml_find_doctype(const char *bytes, int length, int *line);

/* Where an <a href> of an HTML page stands: what a directory listing puts around its links. */
enum {
  CXML_IN_OTHER = 0,
  /* In a <pre> (nginx, Apache's FancyIndexing without HTMLTable): one entry a line. */
  CXML_IN_PRE = 1,
  /* In a table cell, <td> or <th> (Apache's HTMLTable, lighttpd). */
  CXML_IN_CELL = 2,
  /* In a list item, <li> (Apache without FancyIndexing). */
  CXML_IN_ITEM = 3
};

/* One <a href="..."> of an HTML page, in document order. The strings are UTF-8 with their
 * entities decoded, NUL-terminated, and owned by the cxml_html that holds the link. */
typedef struct {
  /* The href attribute as written (entities decoded); NULL when it is longer than the limit. */
  char *href;
  /* The link's text, runs of white space made one space. */
  char *text;
  /* The text that follows the link, white space collapsed, up to the next link, the end of its
   * table row or list item or, in a <pre>, the end of its line; each table cell after the link's
   * own starts with a tab. At most the limit's bytes of it are kept. */
  char *after;
  /* The class attribute of the table cell that holds the link (lighttpd's "n"), or NULL. */
  char *cell_class;
  /* The line of the <a> element as libxml2 counts it (from 1). */
  int line;
  /* CXML_IN_PRE, CXML_IN_CELL, CXML_IN_ITEM or CXML_IN_OTHER: the nearest of <pre>, <td>/<th>
   * and <li> around the link. */
  int container;
} cxml_link;

typedef struct {
  /* The most links returned; a page with more stops being read there (more_links is set). */
  int max_links;
  /* The longest href returned (bytes); a longer one is returned as NULL. */
  int max_href;
  /* The most bytes of a link's text, of the text after it and of the page's title. */
  int max_text;
  /* The most bytes all the strings returned may take together; past it the page stops being
   * read (more_links is set). */
  long max_total;
} cxml_html_limits;

typedef struct {
  cxml_link *links;
  int count;
  /* 1 when the page had more links than max_links, or more text than max_total. */
  int more_links;
  /* The text of the page's first <title>, white space collapsed, or NULL. */
  char *title;
  /* Private: the capacity of links, the bytes allocated. */
  int capacity;
  long total;
} cxml_html;

/* Parses an HTML page held in memory with libxml2's HTML parser (htmlReadMemory, with
 * HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING: nothing is
 * fetched, no error is printed, a broken page is read as a browser would) and fills `out` with
 * its links, within `limits`. `encoding` is the page's character set as libxml2 names it
 * ("UTF-8", "ISO-8859-1"), which wins over any <meta charset> of the page; NULL reads UTF-8.
 * The text of <script> and <style> elements is skipped. Returns 0, or -1 when libxml2 made no
 * document of the bytes (empty, or out of memory) and -2 when memory ran out while copying: `out`
 * is then empty. Call cxml_html_free(out) after either. */
int cxml_html_links(const char *bytes, int length, const char *encoding, const cxml_html_limits *limits,
                    cxml_html *out);

/* Frees what cxml_html_links put in `html` and empties it. */
void cxml_html_free(cxml_html *html);

#endif
