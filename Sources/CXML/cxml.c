#include "cxml.h"

#include <libxml/SAX2.h>
#include <libxml/parser.h>
#include <string.h>

typedef struct {
  int found;
  int line;
} Found;

/* libxml2 calls this for every <!DOCTYPE>, with or without an internal subset. */
static void on_doctype(void *context, const xmlChar *name, const xmlChar *external, const xmlChar *system) {
  (void)name;
  (void)external;
  (void)system;
  xmlParserCtxtPtr parser = (xmlParserCtxtPtr)context;
  Found *found = (Found *)parser->_private;
  found->found = 1;
  found->line = xmlSAX2GetLineNumber(parser);
  xmlStopParser(parser);
}

int cxml_find_doctype(const char *bytes, int length, int *line) {
  xmlSAXHandler handler;
  memset(&handler, 0, sizeof handler);
  handler.initialized = XML_SAX2_MAGIC;
  handler.internalSubset = on_doctype;
  xmlParserCtxtPtr parser = xmlCreatePushParserCtxt(&handler, NULL, NULL, 0, NULL);
  if (parser == NULL) return -1;
  Found found = {0, 0};
  parser->_private = &found;
  /* RECOVER as Foundation's XMLParser parses: a DOCTYPE past an error is found too. */
  xmlCtxtUseOptions(parser, XML_PARSE_RECOVER | XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  xmlParseChunk(parser, bytes, length, 1);
  xmlFreeParserCtxt(parser);
  if (found.found && line != NULL) *line = found.line;
  return found.found;
}
