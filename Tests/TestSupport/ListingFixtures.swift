/// Directory listings exactly as real servers served them (byte for byte, captured once with
/// `curl -s` from servers run on 127.0.0.1 for it; the tests need none of them installed). The
/// folder listed held:
///
///     100%.txt  a#b.txt  a&b <c>.txt  with space.txt  ünïcødé.txt  semi;colon?.txt   2 to 6 bytes
///     a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz        2 bytes
///     plain.txt 1,234 bytes   mid.bin 5,000 bytes   big.bin 3,000,000 bytes
///     empty/   sub folder/ (inner.txt, deeper/leaf.txt)
///
/// every file and folder dated 2024-03-05 10:20:00 UTC, the servers' time zone UTC. Each string was
/// checked against the capture, byte for byte, when this file was made.
public enum ListingFixtures {
  /// nginx 1.22.1 (Debian 12) with `autoindex on;`:
  /// `http://127.0.0.1:18083/pub/`, `Content-Type: text/html`.
  public static let nginx = Fixture(
    url: "http://127.0.0.1:18083/pub/", contentType: "text/html", crlf: true,
    body: #"""
      <html>
      <head><title>Index of /pub/</title></head>
      <body>
      <h1>Index of /pub/</h1><hr><pre><a href="../">../</a>
      <a href="empty/">empty/</a>                                             05-Mar-2024 10:20                   -
      <a href="sub%20folder/">sub folder/</a>                                        05-Mar-2024 10:20                   -
      <a href="100%25.txt">100%.txt</a>                                           05-Mar-2024 10:20                   2
      <a href="a%23b.txt">a#b.txt</a>                                            05-Mar-2024 10:20                   2
      <a href="a%26b%20%3Cc%3E.txt">a&amp;b &lt;c&gt;.txt</a>                                        05-Mar-2024 10:20                   2
      <a href="a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz">a-very-long-file-name-that-goes-past-fifty-char..&gt;</a> 05-Mar-2024 10:20                   2
      <a href="big.bin">big.bin</a>                                            05-Mar-2024 10:20             3000000
      <a href="mid.bin">mid.bin</a>                                            05-Mar-2024 10:20                5000
      <a href="plain.txt">plain.txt</a>                                          05-Mar-2024 10:20                1234
      <a href="semi%3Bcolon%3F.txt">semi;colon?.txt</a>                                    05-Mar-2024 10:20                   2
      <a href="with%20space.txt">with space.txt</a>                                     05-Mar-2024 10:20                   6
      <a href="%C3%BCn%C3%AFc%C3%B8d%C3%A9.txt">ünïcødé.txt</a>                                    05-Mar-2024 10:20                   2
      </pre><hr></body>
      </html>

      """#)

  /// nginx 1.22.1 with `autoindex on; autoindex_exact_size off;` (the same folder):
  /// `http://127.0.0.1:18083/approx/`, `Content-Type: text/html`.
  public static let nginxApproximate = Fixture(
    url: "http://127.0.0.1:18083/approx/", contentType: "text/html", crlf: true,
    body: #"""
      <html>
      <head><title>Index of /approx/</title></head>
      <body>
      <h1>Index of /approx/</h1><hr><pre><a href="../">../</a>
      <a href="empty/">empty/</a>                                             05-Mar-2024 10:20       -
      <a href="sub%20folder/">sub folder/</a>                                        05-Mar-2024 10:20       -
      <a href="100%25.txt">100%.txt</a>                                           05-Mar-2024 10:20       2
      <a href="a%23b.txt">a#b.txt</a>                                            05-Mar-2024 10:20       2
      <a href="a%26b%20%3Cc%3E.txt">a&amp;b &lt;c&gt;.txt</a>                                        05-Mar-2024 10:20       2
      <a href="a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz">a-very-long-file-name-that-goes-past-fifty-char..&gt;</a> 05-Mar-2024 10:20       2
      <a href="big.bin">big.bin</a>                                            05-Mar-2024 10:20      3M
      <a href="mid.bin">mid.bin</a>                                            05-Mar-2024 10:20    5000
      <a href="plain.txt">plain.txt</a>                                          05-Mar-2024 10:20    1234
      <a href="semi%3Bcolon%3F.txt">semi;colon?.txt</a>                                    05-Mar-2024 10:20       2
      <a href="with%20space.txt">with space.txt</a>                                     05-Mar-2024 10:20       6
      <a href="%C3%BCn%C3%AFc%C3%B8d%C3%A9.txt">ünïcødé.txt</a>                                    05-Mar-2024 10:20       2
      </pre><hr></body>
      </html>

      """#)

  /// nginx 1.22.1, an empty folder:
  /// `http://127.0.0.1:18083/pub/empty/`, `Content-Type: text/html`.
  public static let nginxEmpty = Fixture(
    url: "http://127.0.0.1:18083/pub/empty/", contentType: "text/html", crlf: true,
    body: #"""
      <html>
      <head><title>Index of /pub/empty/</title></head>
      <body>
      <h1>Index of /pub/empty/</h1><hr><pre><a href="../">../</a>
      </pre><hr></body>
      </html>

      """#)

  /// nginx 1.22.1 with `autoindex on; autoindex_format json;` (the same folder):
  /// `http://127.0.0.1:18083/json/`, `Content-Type: application/json`.
  public static let nginxJSON = Fixture(
    url: "http://127.0.0.1:18083/json/", contentType: "application/json", crlf: true,
    body: #"""
      [
      { "name":"empty", "type":"directory", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT" },
      { "name":"sub folder", "type":"directory", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT" },
      { "name":"100%.txt", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":2 },
      { "name":"a#b.txt", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":2 },
      { "name":"a&b <c>.txt", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":2 },
      { "name":"a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":2 },
      { "name":"big.bin", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":3000000 },
      { "name":"mid.bin", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":5000 },
      { "name":"plain.txt", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":1234 },
      { "name":"semi;colon?.txt", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":2 },
      { "name":"with space.txt", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":6 },
      { "name":"ünïcødé.txt", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":2 }
      ]
      """#)

  /// Apache 2.4.71 (Debian 12) with Debian's autoindex.conf (`FancyIndexing VersionSort HTMLTable`):
  /// `http://127.0.0.1:18081/pub/`, `Content-Type: text/html;charset=UTF-8`.
  public static let apacheTable = Fixture(
    url: "http://127.0.0.1:18081/pub/", contentType: "text/html;charset=UTF-8",
    body: #"""
      <!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">
      <html>
       <head>
        <title>Index of /pub</title>
       </head>
       <body>
      <h1>Index of /pub</h1>
        <table>
         <tr><th valign="top"><img src="/icons/blank.gif" alt="[ICO]"></th><th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th><th><a href="?C=S;O=A">Size</a></th><th><a href="?C=D;O=A">Description</a></th></tr>
         <tr><th colspan="5"><hr></th></tr>
      <tr><td valign="top"><img src="/icons/back.gif" alt="[PARENTDIR]"></td><td><a href="/">Parent Directory</a></td><td>&nbsp;</td><td align="right">  - </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/text.gif" alt="[TXT]"></td><td><a href="%c3%bcn%c3%afc%c3%b8d%c3%a9.txt">ünïcødé.txt</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  2 </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/text.gif" alt="[TXT]"></td><td><a href="100%25.txt">100%.txt</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  2 </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/text.gif" alt="[TXT]"></td><td><a href="a%23b.txt">a#b.txt</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  2 </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/text.gif" alt="[TXT]"></td><td><a href="a&amp;b%20%3cc%3e.txt">a&amp;b &lt;c&gt;.txt</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  2 </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/compressed.gif" alt="[   ]"></td><td><a href="a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz">a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  2 </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/binary.gif" alt="[   ]"></td><td><a href="big.bin">big.bin</a></td><td align="right">2024-03-05 10:20  </td><td align="right">2.9M</td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/folder.gif" alt="[DIR]"></td><td><a href="empty/">empty/</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  - </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/binary.gif" alt="[   ]"></td><td><a href="mid.bin">mid.bin</a></td><td align="right">2024-03-05 10:20  </td><td align="right">4.9K</td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/text.gif" alt="[TXT]"></td><td><a href="plain.txt">plain.txt</a></td><td align="right">2024-03-05 10:20  </td><td align="right">1.2K</td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/text.gif" alt="[TXT]"></td><td><a href="semi;colon%3f.txt">semi;colon?.txt</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  2 </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/folder.gif" alt="[DIR]"></td><td><a href="sub%20folder/">sub folder/</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  - </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/text.gif" alt="[TXT]"></td><td><a href="with%20space.txt">with space.txt</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  6 </td><td>&nbsp;</td></tr>
         <tr><th colspan="5"><hr></th></tr>
      </table>
      </body></html>

      """#)

  /// Apache 2.4.71 with `IndexOptions -HTMLTable` (FancyIndexing in a <pre>):
  /// `http://127.0.0.1:18081/fancy/`, `Content-Type: text/html;charset=UTF-8`.
  public static let apacheFancy = Fixture(
    url: "http://127.0.0.1:18081/fancy/", contentType: "text/html;charset=UTF-8",
    body: #"""
      <!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">
      <html>
       <head>
        <title>Index of /fancy</title>
       </head>
       <body>
      <h1>Index of /fancy</h1>
      <pre><img src="/icons/blank.gif" alt="Icon "> <a href="?C=N;O=D">Name</a>                                                                  <a href="?C=M;O=A">Last modified</a>      <a href="?C=S;O=A">Size</a>  <a href="?C=D;O=A">Description</a><hr><img src="/icons/back.gif" alt="[PARENTDIR]"> <a href="/">Parent Directory</a>                                                                           -   
      <img src="/icons/text.gif" alt="[TXT]"> <a href="%c3%bcn%c3%afc%c3%b8d%c3%a9.txt">ünïcødé.txt</a>                                                       2024-03-05 10:20    2   
      <img src="/icons/text.gif" alt="[TXT]"> <a href="100%25.txt">100%.txt</a>                                                              2024-03-05 10:20    2   
      <img src="/icons/text.gif" alt="[TXT]"> <a href="a%23b.txt">a#b.txt</a>                                                               2024-03-05 10:20    2   
      <img src="/icons/text.gif" alt="[TXT]"> <a href="a&amp;b%20%3cc%3e.txt">a&amp;b &lt;c&gt;.txt</a>                                                           2024-03-05 10:20    2   
      <img src="/icons/compressed.gif" alt="[   ]"> <a href="a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz">a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz</a> 2024-03-05 10:20    2   
      <img src="/icons/binary.gif" alt="[   ]"> <a href="big.bin">big.bin</a>                                                               2024-03-05 10:20  2.9M  
      <img src="/icons/folder.gif" alt="[DIR]"> <a href="empty/">empty/</a>                                                                2024-03-05 10:20    -   
      <img src="/icons/binary.gif" alt="[   ]"> <a href="mid.bin">mid.bin</a>                                                               2024-03-05 10:20  4.9K  
      <img src="/icons/text.gif" alt="[TXT]"> <a href="plain.txt">plain.txt</a>                                                             2024-03-05 10:20  1.2K  
      <img src="/icons/text.gif" alt="[TXT]"> <a href="semi;colon%3f.txt">semi;colon?.txt</a>                                                       2024-03-05 10:20    2   
      <img src="/icons/folder.gif" alt="[DIR]"> <a href="sub%20folder/">sub folder/</a>                                                           2024-03-05 10:20    -   
      <img src="/icons/text.gif" alt="[TXT]"> <a href="with%20space.txt">with space.txt</a>                                                        2024-03-05 10:20    6   
      <hr></pre>
      </body></html>

      """#)

  /// Apache 2.4.71 with `IndexOptions Charset=UTF-8` only (no FancyIndexing: a list):
  /// `http://127.0.0.1:18081/pub/`, `Content-Type: text/html;charset=UTF-8`.
  public static let apachePlain = Fixture(
    url: "http://127.0.0.1:18081/pub/", contentType: "text/html;charset=UTF-8",
    body: #"""
      <!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">
      <html>
       <head>
        <title>Index of /pub</title>
       </head>
       <body>
      <h1>Index of /pub</h1>
      <ul><li><a href="/"> Parent Directory</a></li>
      <li><a href="100%25.txt"> 100%.txt</a></li>
      <li><a href="a%23b.txt"> a#b.txt</a></li>
      <li><a href="a&amp;b%20%3cc%3e.txt"> a&amp;b &lt;c&gt;.txt</a></li>
      <li><a href="a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz"> a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz</a></li>
      <li><a href="big.bin"> big.bin</a></li>
      <li><a href="empty/"> empty/</a></li>
      <li><a href="mid.bin"> mid.bin</a></li>
      <li><a href="plain.txt"> plain.txt</a></li>
      <li><a href="semi;colon%3f.txt"> semi;colon?.txt</a></li>
      <li><a href="sub%20folder/"> sub folder/</a></li>
      <li><a href="with%20space.txt"> with space.txt</a></li>
      <li><a href="%c3%bcn%c3%afc%c3%b8d%c3%a9.txt"> ünïcødé.txt</a></li>
      </ul>
      </body></html>

      """#)

  /// Apache 2.4.71 with HTMLTable, the sub-folder:
  /// `http://127.0.0.1:18081/pub/sub%20folder/`, `Content-Type: text/html;charset=UTF-8`.
  public static let apacheSubFolder = Fixture(
    url: "http://127.0.0.1:18081/pub/sub%20folder/", contentType: "text/html;charset=UTF-8",
    body: #"""
      <!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">
      <html>
       <head>
        <title>Index of /pub/sub folder</title>
       </head>
       <body>
      <h1>Index of /pub/sub folder</h1>
        <table>
         <tr><th valign="top"><img src="/icons/blank.gif" alt="[ICO]"></th><th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th><th><a href="?C=S;O=A">Size</a></th><th><a href="?C=D;O=A">Description</a></th></tr>
         <tr><th colspan="5"><hr></th></tr>
      <tr><td valign="top"><img src="/icons/back.gif" alt="[PARENTDIR]"></td><td><a href="/pub/">Parent Directory</a></td><td>&nbsp;</td><td align="right">  - </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/folder.gif" alt="[DIR]"></td><td><a href="deeper/">deeper/</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  - </td><td>&nbsp;</td></tr>
      <tr><td valign="top"><img src="/icons/text.gif" alt="[TXT]"></td><td><a href="inner.txt">inner.txt</a></td><td align="right">2024-03-05 10:20  </td><td align="right">  2 </td><td>&nbsp;</td></tr>
         <tr><th colspan="5"><hr></th></tr>
      </table>
      </body></html>

      """#)

  /// Apache 2.4.71 with HTMLTable, an empty folder:
  /// `http://127.0.0.1:18081/pub/empty/`, `Content-Type: text/html;charset=UTF-8`.
  public static let apacheEmpty = Fixture(
    url: "http://127.0.0.1:18081/pub/empty/", contentType: "text/html;charset=UTF-8",
    body: #"""
      <!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">
      <html>
       <head>
        <title>Index of /pub/empty</title>
       </head>
       <body>
      <h1>Index of /pub/empty</h1>
        <table>
         <tr><th valign="top"><img src="/icons/blank.gif" alt="[ICO]"></th><th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th><th><a href="?C=S;O=A">Size</a></th><th><a href="?C=D;O=A">Description</a></th></tr>
         <tr><th colspan="5"><hr></th></tr>
      <tr><td valign="top"><img src="/icons/back.gif" alt="[PARENTDIR]"></td><td><a href="/pub/">Parent Directory</a></td><td>&nbsp;</td><td align="right">  - </td><td>&nbsp;</td></tr>
         <tr><th colspan="5"><hr></th></tr>
      </table>
      </body></html>

      """#)

  /// lighttpd 1.4.69 (Debian 12) with `dir-listing.activate = "enable"`:
  /// `http://127.0.0.1:18082/pub/`, `Content-Type: text/html;charset=utf-8`.
  public static let lighttpd = Fixture(
    url: "http://127.0.0.1:18082/pub/", contentType: "text/html;charset=utf-8",
    body: #"""
      <!DOCTYPE html>
      <html>
      <head>
      <meta charset="utf-8">
      <title>Index of /pub/</title>
      \#(lighttpdStyle)
      </head>
      <body>
      <h2>Index of /pub/</h2>
      <div class="list">
      <table summary="Directory Listing" cellpadding="0" cellspacing="0">
      <thead><tr><th class="n">Name</th><th class="m">Last Modified</th><th class="s">Size</th><th class="t">Type</th></tr></thead>
      <tbody>
      <tr class="d"><td class="n"><a href="../">..</a>/</td><td class="m">&nbsp;</td><td class="s">- &nbsp;</td><td class="t">Directory</td></tr>
      <tr class="d"><td class="n"><a href="empty/">empty</a>/</td><td class="m">2024-Mar-05 10:20:00</td><td class="s">- &nbsp;</td><td class="t">Directory</td></tr>
      <tr class="d"><td class="n"><a href="sub%20folder/">sub folder</a>/</td><td class="m">2024-Mar-05 10:20:00</td><td class="s">- &nbsp;</td><td class="t">Directory</td></tr>
      <tr><td class="n"><a href="100%25.txt">100%.txt</a></td><td class="m">2024-Mar-05 10:20:00</td><td class="s">0.1K</td><td class="t">text/plain</td></tr>
      <tr><td class="n"><a href="a%23b.txt">a#b.txt</a></td><td class="m">2024-Mar-05 10:20:00</td><td class="s">0.1K</td><td class="t">text/plain</td></tr>
      <tr><td class="n"><a href="a%26b%20%3Cc%3E.txt">a&#x26;b &#x3C;c&#x3E;.txt</a></td><td class="m">2024-Mar-05 10:20:00</td><td class="s">0.1K</td><td class="t">text/plain</td></tr>
      <tr><td class="n"><a href="a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz">a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz</a></td><td class="m">2024-Mar-05 10:20:00</td><td class="s">0.1K</td><td class="t">application/octet-stream</td></tr>
      <tr><td class="n"><a href="big.bin">big.bin</a></td><td class="m">2024-Mar-05 10:20:00</td><td class="s">2.8M</td><td class="t">application/octet-stream</td></tr>
      <tr><td class="n"><a href="mid.bin">mid.bin</a></td><td class="m">2024-Mar-05 10:20:00</td><td class="s">4.9K</td><td class="t">application/octet-stream</td></tr>
      <tr><td class="n"><a href="plain.txt">plain.txt</a></td><td class="m">2024-Mar-05 10:20:00</td><td class="s">1.2K</td><td class="t">text/plain</td></tr>
      <tr><td class="n"><a href="semi%3Bcolon%3F.txt">semi;colon?.txt</a></td><td class="m">2024-Mar-05 10:20:00</td><td class="s">0.1K</td><td class="t">text/plain</td></tr>
      <tr><td class="n"><a href="with%20space.txt">with space.txt</a></td><td class="m">2024-Mar-05 10:20:00</td><td class="s">0.1K</td><td class="t">text/plain</td></tr>
      <tr><td class="n"><a href="%C3%BCn%C3%AFc%C3%B8d%C3%A9.txt">ünïcødé.txt</a></td><td class="m">2024-Mar-05 10:20:00</td><td class="s">0.1K</td><td class="t">text/plain</td></tr>
      \#(lighttpdEnd)
      """#)

  /// lighttpd 1.4.69, an empty folder:
  /// `http://127.0.0.1:18082/pub/empty/`, `Content-Type: text/html;charset=utf-8`.
  public static let lighttpdEmpty = Fixture(
    url: "http://127.0.0.1:18082/pub/empty/", contentType: "text/html;charset=utf-8",
    body: #"""
      <!DOCTYPE html>
      <html>
      <head>
      <meta charset="utf-8">
      <title>Index of /pub/empty/</title>
      \#(lighttpdStyle)
      </head>
      <body>
      <h2>Index of /pub/empty/</h2>
      <div class="list">
      <table summary="Directory Listing" cellpadding="0" cellspacing="0">
      <thead><tr><th class="n">Name</th><th class="m">Last Modified</th><th class="s">Size</th><th class="t">Type</th></tr></thead>
      <tbody>
      <tr class="d"><td class="n"><a href="../">..</a>/</td><td class="m">&nbsp;</td><td class="s">- &nbsp;</td><td class="t">Directory</td></tr>
      \#(lighttpdEnd)
      """#)

  /// The style sheet both lighttpd pages carry, as captured.
  private static let lighttpdStyle = #"""
    <style type="text/css">
    a, a:active {text-decoration: none; color: blue;}
    a:visited {color: #48468F;}
    a:hover, a:focus {text-decoration: underline; color: red;}
    body {background-color: #F5F5F5;}
    h2 {margin-bottom: 12px;}
    table {margin-left: 12px;}
    th, td { font: 90% monospace; text-align: left;}
    th { font-weight: bold; padding-right: 14px; padding-bottom: 3px;}
    td {padding-right: 14px;}
    td.s, th.s {text-align: right;}
    div.list { background-color: white; border-top: 1px solid #646464; border-bottom: 1px solid #646464; padding-top: 10px; padding-bottom: 14px;}
    div.foot { font: 90% monospace; color: #787878; padding-top: 4px;}
    </style>
    """#

  /// The end both lighttpd pages share, as captured: the table's end, the footer and the script
  /// that sorts the table, then `</html>` and a line break.
  private static let lighttpdEnd = #"""
    </tbody>
    </table>
    </div>
    <div class="foot">lighttpd/1.4.69</div>

    <script type="text/javascript">
    // <!--

    var click_column;
    var name_column = 0;
    var date_column = 1;
    var size_column = 2;
    var type_column = 3;
    var prev_span = null;

    if (typeof(String.prototype.localeCompare) === 'undefined') {
     String.prototype.localeCompare = function(str, locale, options) {
       return ((this == str) ? 0 : ((this > str) ? 1 : -1));
     };
    }

    if (typeof(String.prototype.toLocaleUpperCase) === 'undefined') {
     String.prototype.toLocaleUpperCase = function() {
      return this.toUpperCase();
     };
    }

    function get_inner_text(el) {
     if((typeof el == 'string')||(typeof el == 'undefined'))
      return el;
     if(el.innerText)
      return el.innerText;
     else {
      var str = "";
      var cs = el.childNodes;
      var l = cs.length;
      for (var i=0;i<l;i++) {
       if (cs[i].nodeType==1) str += get_inner_text(cs[i]);
       else if (cs[i].nodeType==3) str += cs[i].nodeValue;
      }
     }
     return str;
    }

    function isdigit(c) {
     return (c >= '0' && c <= '9');
    }

    function unit_multiplier(unit) {
     return (unit=='K') ? 1000
          : (unit=='M') ? 1000000
          : (unit=='G') ? 1000000000
          : (unit=='T') ? 1000000000000
          : (unit=='P') ? 1000000000000000
          : (unit=='E') ? 1000000000000000000 : 1;
    }

    var li_date_regex=/(\d{4})-(\w{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2})/;

    var li_mon = ['Jan','Feb','Mar','Apr','May','Jun',
                  'Jul','Aug','Sep','Oct','Nov','Dec'];

    function li_mon_num(mon) {
     var i; for (i = 0; i < 12 && mon != li_mon[i]; ++i); return i;
    }

    function li_date_cmp(s1, s2) {
     var dp1 = li_date_regex.exec(s1)
     var dp2 = li_date_regex.exec(s2)
     for (var i = 1; i < 7; ++i) {
      var cmp = (2 != i)
       ? parseInt(dp1[i]) - parseInt(dp2[i])
       : li_mon_num(dp1[2]) - li_mon_num(dp2[2]);
      if (0 != cmp) return cmp;
     }
     return 0;
    }

    function sortfn_then_by_name(a,b,sort_column) {
     if (sort_column == name_column || sort_column == type_column) {
      var ad = (a.cells[type_column].innerHTML === 'Directory');
      var bd = (b.cells[type_column].innerHTML === 'Directory');
      if (ad != bd) return (ad ? -1 : 1);
     }
     var at = get_inner_text(a.cells[sort_column]);
     var bt = get_inner_text(b.cells[sort_column]);
     var cmp;
     if (sort_column == name_column) {
      if (at == '../') return -1;
      if (bt == '../') return  1;
     }
     if (a.cells[sort_column].className == 'int') {
      cmp = parseInt(at)-parseInt(bt);
     } else if (sort_column == date_column) {
      var ad = isdigit(at.substr(0,1));
      var bd = isdigit(bt.substr(0,1));
      if (ad != bd) return (!ad ? -1 : 1);
      cmp = li_date_cmp(at,bt);
     } else if (sort_column == size_column) {
      var ai = parseInt(at, 10) * unit_multiplier(at.substr(-1,1));
      var bi = parseInt(bt, 10) * unit_multiplier(bt.substr(-1,1));
      if (at.substr(0,1) == '-') ai = -1;
      if (bt.substr(0,1) == '-') bi = -1;
      cmp = ai - bi;
     } else {
      cmp = at.toLocaleUpperCase().localeCompare(bt.toLocaleUpperCase());
      if (0 != cmp) return cmp;
      cmp = at.localeCompare(bt);
     }
     if (0 != cmp || sort_column == name_column) return cmp;
     return sortfn_then_by_name(a,b,name_column);
    }

    function sortfn(a,b) {
     return sortfn_then_by_name(a,b,click_column);
    }

    function resort(lnk) {
     var span = lnk.childNodes[1];
     var table = lnk.parentNode.parentNode.parentNode.parentNode;
     var rows = new Array();
     for (var j=1;j<table.rows.length;j++)
      rows[j-1] = table.rows[j];
     click_column = lnk.parentNode.cellIndex;
     rows.sort(sortfn);

     if (prev_span != null) prev_span.innerHTML = '';
     if (span.getAttribute('sortdir')=='down') {
      span.innerHTML = '&uarr;';
      span.setAttribute('sortdir','up');
      rows.reverse();
     } else {
      span.innerHTML = '&darr;';
      span.setAttribute('sortdir','down');
     }
     for (var i=0;i<rows.length;i++)
      table.tBodies[0].appendChild(rows[i]);
     prev_span = span;
    }

    function init_sort(init_sort_column, ascending) {
     var tables = document.getElementsByTagName("table");
     for (var i = 0; i < tables.length; i++) {
      var table = tables[i];
      //var c = table.getAttribute("class")
      //if (-1 != c.split(" ").indexOf("sort")) {
       var row = table.rows[0].cells;
       for (var j = 0; j < row.length; j++) {
        var n = row[j];
        if (n.childNodes.length == 1 && n.childNodes[0].nodeType == 3) {
         var link = document.createElement("a");
         var title = n.childNodes[0].nodeValue.replace(/:$/, "");
         link.appendChild(document.createTextNode(title));
         link.setAttribute("href", "#");
         link.setAttribute("class", "sortheader");
         link.setAttribute("onclick", "resort(this);return false;");
         var arrow = document.createElement("span");
         arrow.setAttribute("class", "sortarrow");
         arrow.appendChild(document.createTextNode(":"));
         link.appendChild(arrow)
         n.replaceChild(link, n.firstChild);
        }
       }
       var lnk = row[init_sort_column].firstChild;
       if (ascending) {
        var span = lnk.childNodes[1];
        span.setAttribute('sortdir','down');
       }
       resort(lnk);
      //}
     }
    }

    function init_sort_from_query() {
      var urlParams = new URLSearchParams(location.search);
      var c = 0;
      var o = 0;
      switch (urlParams.get('C')) {
        case "N": c=0; break;
        case "M": c=1; break;
        case "S": c=2; break;
        case "T":
        case "D": c=3; break;
      }
      switch (urlParams.get('O')) {
        case "A": o=1; break;
        case "D": o=0; break;
      }
      init_sort(c,o);
    }
    init_sort_from_query();

    // -->
    </script>

    </body>
    </html>

    """#

  public struct Fixture: Sendable {
    public var url: String
    public var contentType: String
    /// nginx ends its lines with CRLF: the body is written here with LF (a string literal's line
    /// breaks), and `bytes` puts the CR back.
    public var crlf = false
    public var body: String

    /// The bytes as served.
    public var bytes: [UInt8] { Array((crlf ? body.replacingOccurrences(of: "\n", with: "\r\n") : body).utf8) }
  }
}
