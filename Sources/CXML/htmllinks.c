#include "cxml.h"

#include <libxml/HTMLparser.h>
#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>

/* A growing string with a byte limit; what does not fit is dropped. */
typedef struct {
  char *data;
  size_t length;
  size_t capacity;
  size_t limit;
} Text;

typedef struct {
  cxml_html *out;
  const cxml_html_limits *limits;
  /* The link whose `after` text is being gathered, or -1. */
  int open;
  /* The <a> element being walked through: its text is the link's. */
  xmlNodePtr inside;
  Text text;
  Text after;
  int stop;
  int failed;
} Walk;

static int named(xmlNodePtr node, const char *name) {
  return node != NULL && node->type == XML_ELEMENT_NODE && node->name != NULL &&
         xmlStrcasecmp(node->name, (const xmlChar *)name) == 0;
}

static int named_any(xmlNodePtr node, const char *const *names) {
  for (; *names != NULL; names++) {
    if (named(node, *names)) return 1;
  }
  return 0;
}

/* Elements that end what follows a link (a row, an item, a paragraph...). */
static const char *const blocks[] = {
    "tr", "li", "pre", "table", "thead", "tbody", "tfoot", "ul", "ol", "dl", "dt", "dd", "div", "p",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "br", "address", "form", "body", "html", "blockquote",
    "center", "section", "article", "header", "footer", "nav", "main", NULL};

/* Elements whose text is no page text. */
static const char *const skipped[] = {"script", "style", "template", "noscript", NULL};

/* Counts `bytes` more against the page's budget; 0 when it is spent. */
static int charge(Walk *walk, size_t bytes) {
  if ((long)bytes > walk->limits->max_total - walk->out->total) {
    walk->out->more_links = 1;
    walk->stop = 1;
    return 0;
  }
  walk->out->total += (long)bytes;
  return 1;
}

static void text_reset(Text *text, size_t limit) {
  free(text->data);
  memset(text, 0, sizeof *text);
  text->limit = limit;
}

static int text_push(Walk *walk, Text *text, char byte) {
  if (text->length >= text->limit) return 1;
  if (text->length + 1 >= text->capacity) {
    size_t capacity = text->capacity < 16 ? 16 : text->capacity * 2;
    if (capacity > text->limit + 1) capacity = text->limit + 1;
    if (!charge(walk, capacity - text->capacity)) return 0;
    char *data = realloc(text->data, capacity);
    if (data == NULL) {
      walk->failed = 1;
      walk->stop = 1;
      return 0;
    }
    text->data = data;
    text->capacity = capacity;
  }
  text->data[text->length++] = byte;
  text->data[text->length] = 0;
  return 1;
}

static int is_space(char byte) {
  return byte == ' ' || byte == '\t' || byte == '\n' || byte == '\r' || byte == '\f';
}

/* Appends `count` bytes, each run of white space as one space; with `stop_at_newline`, up to the
 * first line break (then returns 1). */
static int text_append(Walk *walk, Text *text, const char *bytes, size_t count, int stop_at_newline) {
  for (size_t index = 0; index < count && !walk->stop; index++) {
    char byte = bytes[index];
    if (stop_at_newline && byte == '\n') return 1;
    if (is_space(byte)) {
      if (text->length > 0 && is_space(text->data[text->length - 1])) continue;
      byte = ' ';
    }
    if (!text_push(walk, text, byte)) return 0;
  }
  return 0;
}

/* Marks the start of a table cell in `after`: a tab, in place of a space just before it. */
static void text_cell(Walk *walk, Text *text) {
  if (text->length > 0 && text->data[text->length - 1] == ' ') {
    text->data[text->length - 1] = '\t';
    return;
  }
  text_push(walk, text, '\t');
}

/* A copy of `text` that the page's budget pays for, or NULL (an empty Text gives ""). */
static char *text_take(Walk *walk, Text *text) {
  char *taken = text->data;
  if (taken == NULL) {
    if (!charge(walk, 1)) return NULL;
    taken = calloc(1, 1);
    if (taken == NULL) {
      walk->failed = 1;
      walk->stop = 1;
    }
  }
  memset(text, 0, sizeof *text);
  return taken;
}

/* Ends the open link: its text and the text after it are stored. */
static void close_link(Walk *walk) {
  if (walk->open < 0) return;
  cxml_link *link = &walk->out->links[walk->open];
  link->text = text_take(walk, &walk->text);
  link->after = text_take(walk, &walk->after);
  walk->open = -1;
  walk->inside = NULL;
}

/* The nearest <pre>, <td>/<th> or <li> around `node` (at most 64 levels up). */
static xmlNodePtr container_of(xmlNodePtr node, int *kind) {
  int steps = 0;
  for (xmlNodePtr up = node->parent; up != NULL && steps < 64; up = up->parent, steps++) {
    if (named(up, "pre")) {
      *kind = CXML_IN_PRE;
      return up;
    }
    if (named(up, "td") || named(up, "th")) {
      *kind = CXML_IN_CELL;
      return up;
    }
    if (named(up, "li")) {
      *kind = CXML_IN_ITEM;
      return up;
    }
  }
  *kind = CXML_IN_OTHER;
  return NULL;
}

/* A copy of an attribute's value of at most `limit` bytes that the budget pays for; NULL when
 * it is missing, longer, or memory ran out (`*longer` says which). */
static char *attribute(Walk *walk, xmlNodePtr node, const char *name, size_t limit, int *longer) {
  *longer = 0;
  xmlChar *value = xmlGetProp(node, (const xmlChar *)name);
  if (value == NULL) return NULL;
  size_t length = strlen((const char *)value);
  char *copy = NULL;
  if (length > limit) {
    *longer = 1;
  } else if (charge(walk, length + 1)) {
    copy = malloc(length + 1);
    if (copy == NULL) {
      walk->failed = 1;
      walk->stop = 1;
    } else {
      memcpy(copy, value, length + 1);
    }
  }
  xmlFree(value);
  return copy;
}

static void open_link(Walk *walk, xmlNodePtr node) {
  cxml_html *out = walk->out;
  close_link(walk);
  if (walk->stop) return;
  if (out->count >= walk->limits->max_links) {
    out->more_links = 1;
    walk->stop = 1;
    return;
  }
  if (out->count == out->capacity) {
    int capacity = out->capacity < 64 ? 64 : out->capacity * 2;
    if (capacity > walk->limits->max_links) capacity = walk->limits->max_links;
    if (!charge(walk, (size_t)(capacity - out->capacity) * sizeof(cxml_link))) return;
    cxml_link *links = realloc(out->links, (size_t)capacity * sizeof(cxml_link));
    if (links == NULL) {
      walk->failed = 1;
      walk->stop = 1;
      return;
    }
    out->links = links;
    out->capacity = capacity;
  }
  cxml_link *link = &out->links[out->count];
  memset(link, 0, sizeof *link);
  out->count++;
  int longer = 0;
  link->href = attribute(walk, node, "href", (size_t)walk->limits->max_href, &longer);
  long line = xmlGetLineNo(node);
  link->line = line > 0 && line < 0x7fffffff ? (int)line : 0;
  xmlNodePtr cell = container_of(node, &link->container);
  if (link->container == CXML_IN_CELL) link->cell_class = attribute(walk, cell, "class", 64, &longer);
  text_reset(&walk->text, (size_t)walk->limits->max_text);
  text_reset(&walk->after, (size_t)walk->limits->max_text);
  walk->open = out->count - 1;
  walk->inside = node;
}

static void title_text(Walk *walk, xmlNodePtr title) {
  Text text = {NULL, 0, 0, (size_t)walk->limits->max_text};
  for (xmlNodePtr child = title->children; child != NULL && !walk->stop; child = child->next) {
    if (child->type == XML_TEXT_NODE && child->content != NULL) {
      text_append(walk, &text, (const char *)child->content, strlen((const char *)child->content), 0);
    }
  }
  walk->out->title = text_take(walk, &text);
}

static int is_link(xmlNodePtr node) {
  return named(node, "a") && xmlHasProp(node, (const xmlChar *)"href") != NULL;
}

/* What entering an element does to the open link. */
static void enter(Walk *walk, xmlNodePtr node) {
  if (is_link(node)) {
    open_link(walk, node);
  } else if (named_any(node, blocks)) {
    close_link(walk);
  } else if ((named(node, "td") || named(node, "th")) && walk->open >= 0 && walk->inside == NULL) {
    text_cell(walk, &walk->after);
  } else if (named(node, "title") && walk->out->title == NULL) {
    title_text(walk, node);
  }
}

/* What leaving an element does. */
static void leave(Walk *walk, xmlNodePtr node) {
  if (node == walk->inside) {
    walk->inside = NULL;
  } else if (named_any(node, blocks)) {
    close_link(walk);
  }
}

static void text_node(Walk *walk, xmlNodePtr node) {
  if (walk->open < 0 || node->content == NULL) return;
  const char *content = (const char *)node->content;
  size_t length = strlen(content);
  if (walk->inside != NULL) {
    text_append(walk, &walk->text, content, length, 0);
    return;
  }
  int in_pre = walk->out->links[walk->open].container == CXML_IN_PRE;
  if (text_append(walk, &walk->after, content, length, in_pre)) close_link(walk);
}

/* Walks the tree in document order without recursion (a hostile page may nest deeply). */
static void walk_tree(Walk *walk, xmlNodePtr root) {
  xmlNodePtr node = root;
  while (node != NULL && !walk->stop) {
    int descend = 0;
    if (node->type == XML_ELEMENT_NODE) {
      if (named_any(node, skipped)) {
        close_link(walk);
      } else {
        enter(walk, node);
        descend = node->children != NULL && !named(node, "title");
        if (!descend) leave(walk, node);
      }
    } else if (node->type == XML_TEXT_NODE) {
      text_node(walk, node);
    }
    if (descend) {
      node = node->children;
      continue;
    }
    /* Up until a node with a next sibling, leaving each element passed. */
    while (node != NULL && node != root && node->next == NULL && !walk->stop) {
      node = node->parent;
      if (node != NULL && node->type == XML_ELEMENT_NODE) leave(walk, node);
    }
    if (node == NULL || node == root) break;
    node = node->next;
  }
  close_link(walk);
}

int cxml_html_links(const char *bytes, int length, const char *encoding, const cxml_html_limits *limits,
                    cxml_html *out) {
  memset(out, 0, sizeof *out);
  if (bytes == NULL || length <= 0 || limits == NULL) return -1;
  int options = HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING;
  if (encoding != NULL) options |= HTML_PARSE_IGNORE_ENC;
  htmlDocPtr document = htmlReadMemory(bytes, length, NULL, encoding != NULL ? encoding : "UTF-8", options);
  if (document == NULL) return -1;
  Walk walk;
  memset(&walk, 0, sizeof walk);
  walk.out = out;
  walk.limits = limits;
  walk.open = -1;
  xmlNodePtr root = xmlDocGetRootElement(document);
  if (root != NULL) walk_tree(&walk, root);
  free(walk.text.data);
  free(walk.after.data);
  xmlFreeDoc(document);
  if (walk.failed) {
    cxml_html_free(out);
    return -2;
  }
  return 0;
}

void cxml_html_free(cxml_html *html) {
  if (html == NULL) return;
  for (int index = 0; index < html->count; index++) {
    free(html->links[index].href);
    free(html->links[index].text);
    free(html->links[index].after);
    free(html->links[index].cell_class);
  }
  free(html->links);
  free(html->title);
  memset(html, 0, sizeof *html);
}
