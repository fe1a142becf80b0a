#ifndef CXML_H
#define CXML_H

/* Whether an XML document has a document type declaration (<!DOCTYPE ...>), as libxml2's own
 * parser finds it: 1 (with the line libxml2 was on), 0 for none, -1 when the parser could not
 * start. The parse stops at the declaration: nothing of it is read further, no entity is
 * substituted (no XML_PARSE_NOENT), no external subset loaded (no XML_PARSE_DTDLOAD), nothing
 * fetched (XML_PARSE_NONET). */
int cxml_find_doctype(const char *bytes, int length, int *line);

#endif
