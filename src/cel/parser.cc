#include "cel/parser.h"

#include <algorithm>

namespace kcm::cel {
namespace {

// ---- UTF-8 <-> code points (invalid bytes become U+FFFD, as Go's decoder).

std::u32string decodeUtf8(const std::string& s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) {
      out.push_back(0xFFFD), ++i;
      continue;
    }
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    bool ok = true;
    for (int k = 1; k < n; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD), ++i;
      continue;
    }
    out.push_back(cp);
    i += n;
  }
  return out;
}

void appendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// ---- Lexer.

enum class Tok { kEOF, kIdent, kInt, kUint, kDouble, kString, kBytes, kPunct, kError };

struct Token {
  Tok kind = Tok::kEOF;
  std::string text;  // ident, punctuation, or the literal's source text
  int offset = 0;
};

bool isIdentStart(char32_t c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool isDigit(char32_t c) { return c >= '0' && c <= '9'; }
bool isHex(char32_t c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

class Lexer {
 public:
  explicit Lexer(const std::u32string& s) : s_(s) {}

  Token next() {
    skipSpaceAndComments();
    Token t;
    t.offset = static_cast<int>(i_);
    if (i_ >= s_.size()) return t;
    const char32_t c = s_[i_];
    // String and bytes literals, with r/R (raw) and b/B (bytes) prefixes in either order.
    size_t p = i_;
    bool raw = false, bytes = false;
    while (p < s_.size() && p - i_ < 2 && (s_[p] == 'r' || s_[p] == 'R' || s_[p] == 'b' || s_[p] == 'B')) {
      if (s_[p] == 'r' || s_[p] == 'R') raw = true; else bytes = true;
      ++p;
    }
    if (p < s_.size() && (s_[p] == '\'' || s_[p] == '"')) {
      i_ = p;
      if (!lexString(raw)) return error(t.offset, "unterminated string literal");
      t.kind = bytes ? Tok::kBytes : Tok::kString;
      t.text = "string";
      return t;
    }
    if (isIdentStart(c)) {
      while (i_ < s_.size() && (isIdentStart(s_[i_]) || isDigit(s_[i_]))) appendUtf8(t.text, s_[i_++]);
      t.kind = Tok::kIdent;
      return t;
    }
    if (isDigit(c) || (c == '.' && i_ + 1 < s_.size() && isDigit(s_[i_ + 1]))) return lexNumber(t);
    static const char* kTwo[] = {"<=", ">=", "==", "!=", "&&", "||"};
    for (const char* two : kTwo)
      if (i_ + 1 < s_.size() && s_[i_] == static_cast<char32_t>(two[0]) && s_[i_ + 1] == static_cast<char32_t>(two[1])) {
        i_ += 2;
        t.kind = Tok::kPunct;
        t.text = two;
        return t;
      }
    static const std::u32string kOne = U"()[]{}.,?:!-+*/%<>";
    if (kOne.find(c) != std::u32string::npos) {
      ++i_;
      t.kind = Tok::kPunct;
      appendUtf8(t.text, c);
      return t;
    }
    std::string bad;
    appendUtf8(bad, c);
    return error(t.offset, "token recognition error at: '" + bad + "'");
  }

 private:
  Token error(int offset, std::string msg) {
    Token t;
    t.kind = Tok::kError;
    t.offset = offset;
    t.text = std::move(msg);
    i_ = s_.size();
    return t;
  }

  void skipSpaceAndComments() {
    for (;;) {
      while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\f'))
        ++i_;
      if (i_ + 1 < s_.size() && s_[i_] == '/' && s_[i_ + 1] == '/') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        continue;
      }
      return;
    }
  }

  bool lexString(bool raw) {
    const char32_t q = s_[i_];
    const bool triple = i_ + 2 < s_.size() && s_[i_ + 1] == q && s_[i_ + 2] == q;
    i_ += triple ? 3 : 1;
    while (i_ < s_.size()) {
      if (!raw && s_[i_] == '\\') {
        i_ += 2;
        continue;
      }
      if (s_[i_] == q) {
        if (!triple) {
          ++i_;
          return true;
        }
        if (i_ + 2 < s_.size() && s_[i_ + 1] == q && s_[i_ + 2] == q) {
          i_ += 3;
          return true;
        }
      }
      if (!triple && (s_[i_] == '\n' || s_[i_] == '\r')) return false;
      ++i_;
    }
    return false;
  }

  Token lexNumber(Token t) {
    const size_t start = i_;
    if (s_[i_] == '0' && i_ + 1 < s_.size() && (s_[i_ + 1] == 'x' || s_[i_ + 1] == 'X')) {
      i_ += 2;
      while (i_ < s_.size() && isHex(s_[i_])) ++i_;
      t.kind = Tok::kInt;
    } else {
      while (i_ < s_.size() && isDigit(s_[i_])) ++i_;
      t.kind = Tok::kInt;
      if (i_ + 1 < s_.size() && s_[i_] == '.' && isDigit(s_[i_ + 1])) {
        ++i_;
        while (i_ < s_.size() && isDigit(s_[i_])) ++i_;
        t.kind = Tok::kDouble;
      }
      if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
        size_t p = i_ + 1;
        if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
        if (p < s_.size() && isDigit(s_[p])) {
          i_ = p;
          while (i_ < s_.size() && isDigit(s_[i_])) ++i_;
          t.kind = Tok::kDouble;
        }
      }
    }
    if (t.kind == Tok::kInt && i_ < s_.size() && (s_[i_] == 'u' || s_[i_] == 'U')) {
      ++i_;
      t.kind = Tok::kUint;
    }
    for (size_t k = start; k < i_; ++k) appendUtf8(t.text, s_[k]);
    return t;
  }

  const std::u32string& s_;
  size_t i_ = 0;
};

// ---- Parser.

constexpr const char* kAccu = "@result";

class Parser {
 public:
  explicit Parser(const std::u32string& s) : lex_(s) { advance(); }

  ParseResult run() {
    ParseResult r;
    ExprPtr e = expr();
    if (errors_.empty() && tok_.kind != Tok::kEOF) fail(tok_.offset, "mismatched input '" + tokText() + "' expecting <EOF>");
    r.errors = std::move(errors_);
    if (r.errors.empty()) r.expr = std::move(e);
    return r;
  }

 private:
  // -- helpers
  void advance() {
    tok_ = lex_.next();
    if (tok_.kind == Tok::kError) {
      fail(tok_.offset, tok_.text);
      tok_.kind = Tok::kEOF;
    }
  }
  std::string tokText() const { return tok_.kind == Tok::kEOF ? "<EOF>" : tok_.text; }
  bool isPunct(const char* p) const { return tok_.kind == Tok::kPunct && tok_.text == p; }
  bool isKeyword(const char* k) const { return tok_.kind == Tok::kIdent && tok_.text == k; }
  void fail(int offset, std::string msg) {
    if (errors_.empty()) errors_.push_back({offset, "Syntax error: " + std::move(msg)});
  }
  bool expect(const char* p) {
    if (isPunct(p)) {
      advance();
      return true;
    }
    fail(tok_.offset, "mismatched input '" + tokText() + "' expecting '" + p + "'");
    return false;
  }
  ExprPtr node(ExprKind k, int offset) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->id = ++lastId_;
    e->offset = offset;
    return e;
  }
  ExprPtr call(const std::string& fn, int offset, std::vector<ExprPtr> args, ExprPtr target = nullptr) {
    auto e = node(ExprKind::kCall, offset);
    e->name = fn;
    e->args = std::move(args);
    e->target = std::move(target);
    return e;
  }
  ExprPtr ident(const std::string& name, int offset) {
    auto e = node(ExprKind::kIdent, offset);
    e->name = name;
    return e;
  }
  ExprPtr boolLit(bool v, int offset) {
    auto e = node(ExprKind::kConst, offset);
    e->constKind = ConstKind::kBool;
    e->name = v ? "true" : "false";
    return e;
  }
  ExprPtr intLit(int offset) {
    auto e = node(ExprKind::kConst, offset);
    e->constKind = ConstKind::kInt;
    return e;
  }
  static std::vector<ExprPtr> vec(ExprPtr a) {
    std::vector<ExprPtr> v;
    v.push_back(std::move(a));
    return v;
  }
  static std::vector<ExprPtr> vec(ExprPtr a, ExprPtr b) {
    std::vector<ExprPtr> v = vec(std::move(a));
    v.push_back(std::move(b));
    return v;
  }
  static std::vector<ExprPtr> vec(ExprPtr a, ExprPtr b, ExprPtr c) {
    std::vector<ExprPtr> v = vec(std::move(a), std::move(b));
    v.push_back(std::move(c));
    return v;
  }

  // -- grammar
  ExprPtr expr() {
    ExprPtr cond = binary();
    if (!isPunct("?")) return cond;
    const int at = tok_.offset;
    advance();
    ExprPtr t = binary();
    if (!expect(":")) return cond;
    ExprPtr f = expr();
    return call("_?_:_", at, vec(std::move(cond), std::move(t), std::move(f)));
  }

  // Left-associative binary operators by precedence, loosest first; below the last level, unary.
  ExprPtr binary(size_t level = 0) {
    static const std::vector<std::vector<std::string>> kLevels = {
        {"||"}, {"&&"}, {"<", "<=", ">", ">=", "==", "!=", "in"}, {"+", "-"}, {"*", "/", "%"}};
    if (level == kLevels.size()) return unary();
    ExprPtr l = binary(level + 1);
    for (;;) {
      std::string op;
      for (const auto& o : kLevels[level])
        if ((o == "in" && isKeyword("in")) || (o != "in" && isPunct(o.c_str()))) op = o;
      if (op.empty()) return l;
      const int at = tok_.offset;
      advance();
      l = call(op == "in" ? "@in" : "_" + op + "_", at, vec(std::move(l), binary(level + 1)));
    }
  }

  ExprPtr unary() {
    if (isPunct("!") || isPunct("-")) {
      const std::string op = tok_.text;
      const int at = tok_.offset;
      int count = 0;
      while (isPunct(op.c_str())) advance(), ++count;
      // A single minus directly before a number is part of the literal.
      if (op == "-" && count == 1 &&
          (tok_.kind == Tok::kInt || tok_.kind == Tok::kDouble)) {
        tok_.text = "-" + tok_.text;
        tok_.offset = at;
        return member();
      }
      ExprPtr m = member();
      if (count % 2 == 0) return m;
      return call(op == "!" ? "!_" : "-_", at, vec(std::move(m)));
    }
    return member();
  }

  ExprPtr member() {
    ExprPtr e = primary();
    for (;;) {
      if (isPunct(".")) {
        const int at = tok_.offset;
        advance();
        bool opt = false;
        if (isPunct("?")) opt = true, advance();
        if (tok_.kind != Tok::kIdent) {
          fail(tok_.offset, "no viable alternative at input '." + tokText() + "'");
          return e;
        }
        const std::string name = tok_.text;
        advance();
        if (!opt && isPunct("(")) {
          const int open = tok_.offset;
          advance();
          std::vector<ExprPtr> args = exprList(")");
          e = memberCallOrMacro(name, open, std::move(e), std::move(args));
          continue;
        }
        auto s = node(ExprKind::kSelect, at);
        s->name = name;
        s->optional = opt;
        s->target = std::move(e);
        e = std::move(s);
        continue;
      }
      if (isPunct("[")) {
        const int at = tok_.offset;
        advance();
        bool opt = false;
        if (isPunct("?")) opt = true, advance();
        ExprPtr index = expr();
        expect("]");
        e = call(opt ? "_[?_]" : "_[_]", at, vec(std::move(e), std::move(index)));
        continue;
      }
      return e;
    }
  }

  std::vector<ExprPtr> exprList(const char* close) {
    std::vector<ExprPtr> out;
    if (isPunct(close)) {
      advance();
      return out;
    }
    for (;;) {
      out.push_back(expr());
      if (!errors_.empty()) return out;
      if (isPunct(",")) {
        advance();
        continue;
      }
      expect(close);
      return out;
    }
  }

  ExprPtr primary() {
    const int at = tok_.offset;
    switch (tok_.kind) {
      case Tok::kEOF:
        fail(at, "mismatched input '<EOF>' expecting an expression");
        return node(ExprKind::kConst, at);
      case Tok::kInt:
      case Tok::kUint:
      case Tok::kDouble: {
        auto e = node(ExprKind::kConst, at);
        e->constKind = tok_.kind == Tok::kInt ? ConstKind::kInt : tok_.kind == Tok::kUint ? ConstKind::kUint
                                                                                          : ConstKind::kDouble;
        e->name = tok_.text;
        advance();
        return e;
      }
      case Tok::kString:
      case Tok::kBytes: {
        auto e = node(ExprKind::kConst, at);
        e->constKind = tok_.kind == Tok::kString ? ConstKind::kString : ConstKind::kBytes;
        advance();
        return e;
      }
      case Tok::kIdent: {
        const std::string name = tok_.text;
        if (name == "true" || name == "false") {
          advance();
          return boolLit(name == "true", at);
        }
        if (name == "null") {
          advance();
          return node(ExprKind::kConst, at);
        }
        advance();
        if (isPunct("(")) {
          const int open = tok_.offset;
          advance();
          std::vector<ExprPtr> args = exprList(")");
          return globalCallOrMacro(name, open, std::move(args));
        }
        return ident(name, at);
      }
      case Tok::kPunct:
        break;
      default:
        fail(at, "mismatched input '" + tokText() + "'");
        return node(ExprKind::kConst, at);
    }
    if (isPunct(".")) {  // leading-dot identifier: .name
      advance();
      if (tok_.kind != Tok::kIdent) {
        fail(tok_.offset, "no viable alternative at input '." + tokText() + "'");
        return node(ExprKind::kConst, at);
      }
      const std::string name = "." + tok_.text;
      advance();
      if (isPunct("(")) {
        const int open = tok_.offset;
        advance();
        return globalCallOrMacro(name.substr(1), open, exprList(")"));
      }
      return ident(name.substr(1), at);
    }
    if (isPunct("(")) {
      advance();
      ExprPtr e = expr();
      expect(")");
      return e;
    }
    if (isPunct("[")) {
      advance();
      auto l = node(ExprKind::kList, at);
      while (!isPunct("]") && errors_.empty()) {
        if (isPunct("?")) advance(), l->optionalIndices.push_back(static_cast<int>(l->args.size()));
        l->args.push_back(expr());
        if (isPunct(",")) advance();
        else break;
      }
      expect("]");
      return l;
    }
    if (isPunct("{")) {
      advance();
      auto m = node(ExprKind::kMap, at);
      while (!isPunct("}") && errors_.empty()) {
        if (isPunct("?")) advance(), m->optionalIndices.push_back(static_cast<int>(m->args.size() / 2));
        m->args.push_back(expr());
        if (!expect(":")) break;
        m->args.push_back(expr());
        if (isPunct(",")) advance();
        else break;
      }
      expect("}");
      return m;
    }
    fail(at, "mismatched input '" + tokText() + "'");
    advance();
    return node(ExprKind::kConst, at);
  }

  // -- macros (cel-go parser/macro.go and ext.TwoVarComprehensions)

  ExprPtr globalCallOrMacro(const std::string& fn, int open, std::vector<ExprPtr> args) {
    if (fn == "has" && args.size() == 1) {
      if (args[0]->kind != ExprKind::kSelect) {
        fail(args[0]->offset, "invalid argument to has() macro");
        return call(fn, open, std::move(args));
      }
      auto s = std::move(args[0]);
      s->testOnly = true;
      s->id = ++lastId_;
      s->offset = open;
      return s;
    }
    return call(fn, open, std::move(args));
  }

  bool simpleName(const ExprPtr& e, std::string& out) {
    if (e->kind != ExprKind::kIdent) {
      fail(e->offset, "argument must be a simple name");
      return false;
    }
    out = e->name;
    return true;
  }

  ExprPtr accu(int at) { return ident(kAccu, at); }

  // Comprehension over `range` with the given loop pieces.
  ExprPtr comprehension(int at, ExprPtr range, std::string v1, std::string v2, ExprPtr init, ExprPtr cond,
                        ExprPtr step, ExprPtr result, std::string accuVar = kAccu) {
    auto c = node(ExprKind::kComprehension, at);
    c->iterRange = std::move(range);
    c->iterVar = std::move(v1);
    c->iterVar2 = std::move(v2);
    c->accuVar = std::move(accuVar);
    c->accuInit = std::move(init);
    c->loopCondition = std::move(cond);
    c->loopStep = std::move(step);
    c->result = std::move(result);
    return c;
  }

  ExprPtr emptyList(int at) { return node(ExprKind::kList, at); }

  // A deep copy with fresh ids (cel-go's MacroExprFactory.Copy), for macros that use their target twice.
  ExprPtr clone(const Expr& e) {
    auto c = std::make_unique<Expr>();
    c->kind = e.kind, c->id = ++lastId_, c->offset = e.offset, c->constKind = e.constKind, c->name = e.name;
    c->testOnly = e.testOnly, c->optional = e.optional, c->optionalIndices = e.optionalIndices;
    c->iterVar = e.iterVar, c->iterVar2 = e.iterVar2, c->accuVar = e.accuVar;
    auto copy = [&](const ExprPtr& x) { return x ? clone(*x) : nullptr; };
    c->target = copy(e.target), c->iterRange = copy(e.iterRange), c->accuInit = copy(e.accuInit);
    c->loopCondition = copy(e.loopCondition), c->loopStep = copy(e.loopStep), c->result = copy(e.result);
    for (const auto& a : e.args) c->args.push_back(clone(*a));
    return c;
  }

  // A block binding `var` to `init` for `body` (cel-go's comprehension over an empty list).
  ExprPtr bind(int at, const std::string& var, ExprPtr init, ExprPtr body) {
    return comprehension(at, emptyList(at), "#unused", "", std::move(init), boolLit(false, at), ident(var, at),
                         std::move(body), var);
  }
  ExprPtr listOfOne(ExprPtr e, int at) {
    auto l = node(ExprKind::kList, at);
    l->args.push_back(std::move(e));
    return l;
  }

  ExprPtr memberCallOrMacro(const std::string& fn, int at, ExprPtr target, std::vector<ExprPtr> args) {
    const size_t n = args.size();
    const bool quantifier = fn == "all" || fn == "exists" || fn == "exists_one" || fn == "existsOne";
    if ((quantifier && (n == 2 || (n == 3 && fn != "exists_one"))) || ((fn == "map" || fn == "filter") && n >= 2 &&
                                                                         n <= (fn == "map" ? 3u : 2u))) {
      std::string v1, v2;
      if (!simpleName(args[0], v1)) return call(fn, at, std::move(args), std::move(target));
      size_t body = 1;
      if (quantifier && n == 3) {
        if (!simpleName(args[1], v2)) return call(fn, at, std::move(args), std::move(target));
        body = 2;
      }
      if (fn == "all")
        return comprehension(at, std::move(target), v1, v2, boolLit(true, at),
                             call("@not_strictly_false", at, vec(accu(at))),
                             call("_&&_", at, vec(accu(at), std::move(args[body]))), accu(at));
      if (fn == "exists")
        return comprehension(at, std::move(target), v1, v2, boolLit(false, at),
                             call("@not_strictly_false", at, vec(call("!_", at, vec(accu(at))))),
                             call("_||_", at, vec(accu(at), std::move(args[body]))), accu(at));
      if (quantifier)  // exists_one, existsOne
        return comprehension(at, std::move(target), v1, v2, intLit(at), boolLit(true, at),
                             call("_?_:_", at, vec(std::move(args[body]), call("_+_", at, vec(accu(at), intLit(at))),
                                                   accu(at))),
                             call("_==_", at, vec(accu(at), intLit(at))));
      if (fn == "filter") {
        auto var = ident(v1, at);
        return comprehension(at, std::move(target), v1, "", emptyList(at), boolLit(true, at),
                             call("_?_:_", at, vec(std::move(args[1]),
                                                   call("_+_", at, vec(accu(at), listOfOne(std::move(var), at))),
                                                   accu(at))),
                             accu(at));
      }
      // map(x, f) / map(x, p, f)
      ExprPtr step = call("_+_", at, vec(accu(at), listOfOne(std::move(args[n - 1]), at)));
      if (n == 3) step = call("_?_:_", at, vec(std::move(args[1]), std::move(step), accu(at)));
      return comprehension(at, std::move(target), v1, "", emptyList(at), boolLit(true, at), std::move(step), accu(at));
    }
 if ((fn == "optMap" || fn == "optFlatMap") && n == 2) {
      // opt.optMap(v, e): opt.hasValue() ? optional.of(e with v bound to opt.value()) : optional.none()
      std::string v;
      if (!simpleName(args[0], v)) return call(fn, at, std::move(args), std::move(target));
      ExprPtr value = call("value", at, {}, clone(*target));
      ExprPtr bound = bind(at, v, std::move(value), std::move(args[1]));
      if (fn == "optMap") bound = call("optional.of", at, vec(std::move(bound)));
      return call("_?_:_", at, vec(call("hasValue", at, {}, std::move(target)), std::move(bound),
                                   call("optional.none", at, {})));
    }
    if (fn == "sortBy" && n == 2) {
      // list.sortBy(e, key): the list bound once, sorted by the keys its map(e, key) gives.
      std::string v;
      if (!simpleName(args[0], v)) return call(fn, at, std::move(args), std::move(target));
      const std::string input = "@__sortBy_input__";
      ExprPtr keys = comprehension(at, ident(input, at), v, "", emptyList(at), boolLit(true, at),
                                   call("_+_", at, vec(accu(at), listOfOne(std::move(args[1]), at))), accu(at));
      return bind(at, input, std::move(target),
                  call("@sortByAssociatedKeys", at, vec(std::move(keys)), ident(input, at)));
    }
    const bool transform = fn == "transformList" || fn == "transformMap" || fn == "transformMapEntry";
    if (transform && (n == 3 || n == 4)) {
      std::string v1, v2;
      if (!simpleName(args[0], v1) || !simpleName(args[1], v2)) return call(fn, at, std::move(args), std::move(target));
      ExprPtr step, init;
      if (fn == "transformList") {
        init = emptyList(at);
        step = call("_+_", at, vec(accu(at), listOfOne(std::move(args[n - 1]), at)));
      } else {
        init = node(ExprKind::kMap, at);
        step = fn == "transformMap"
                   ? call("cel.@mapInsert", at, vec(accu(at), ident(v1, at), std::move(args[n - 1])))
                   : call("cel.@mapInsert", at, vec(accu(at), std::move(args[n - 1])));
      }
      if (n == 4) step = call("_?_:_", at, vec(std::move(args[2]), std::move(step), accu(at)));
      return comprehension(at, std::move(target), v1, v2, std::move(init), boolLit(true, at), std::move(step),
                           accu(at));
    }
    return call(fn, at, std::move(args), std::move(target));
  }

  Lexer lex_;
  Token tok_;
  int64_t lastId_ = 0;
  std::vector<Issue> errors_;
};

}  // namespace

Source::Source(const std::string& utf8) : text_(decodeUtf8(utf8)) {
  lineStarts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') lineStarts_.push_back(static_cast<int>(i + 1));
}

std::string Source::display(const Issue& issue) const {
  size_t line = 0;
  while (line + 1 < lineStarts_.size() && lineStarts_[line + 1] <= issue.offset) ++line;
  const int column = issue.offset - lineStarts_[line];
  std::string out = "ERROR: <input>:" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " +
                    issue.message;
  const size_t end = line + 1 < lineStarts_.size() ? static_cast<size_t>(lineStarts_[line + 1] - 1) : text_.size();
  std::u32string snippet = text_.substr(lineStarts_[line], end - lineStarts_[line]);
  std::replace(snippet.begin(), snippet.end(), U'\t', U' ');
  std::string src = "\n | ", ind = "\n | ";
  for (char32_t c : snippet) appendUtf8(src, c);
  for (int i = 0; i < column && i < static_cast<int>(snippet.size()); ++i) ind += snippet[i] >= 0x80 ? "\uff0e" : ".";
  ind += column < static_cast<int>(snippet.size()) && snippet[column] >= 0x80 ? "\uff3e" : "^";
  return out + src + ind;
}

std::string formatIssues(const Source& source, std::vector<Issue> issues) {
  std::stable_sort(issues.begin(), issues.end(), [](const Issue& a, const Issue& b) { return a.offset < b.offset; });
  std::string out;
  for (size_t i = 0; i < issues.size(); ++i) out += (i ? "\n" : "") + source.display(issues[i]);
  return out;
}

ParseResult parse(const Source& source) { return Parser(source.text()).run(); }

}  // namespace kcm::cel
