#include "api/support/selector.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace kcm::api {
namespace {

using Op = SelectorRequirement::Op;

bool validKeyChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/'; }
bool validValueChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

Status keyError(const std::string& key) {
  return Status(StatusCode::kInvalidArgument, "unable to parse requirement: invalid label key \"" + key + "\"");
}

Status validateKey(const std::string& key) {
  if (key.empty() || key.size() > 317) return keyError(key);
  auto slash = key.find('/');
  std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  if (name.empty() || name.size() > 63 || !std::isalnum(static_cast<unsigned char>(name.front())) ||
      !std::isalnum(static_cast<unsigned char>(name.back())))
    return keyError(key);
  for (char c : key)
    if (!validKeyChar(c)) return keyError(key);
  return Status::Ok();
}

Status validateValue(const std::string& v) {
  bool ok = v.size() <= 63;
  for (char c : v) ok = ok && validValueChar(c);
  if (!v.empty()) ok = ok && std::isalnum(static_cast<unsigned char>(v.front())) && std::isalnum(static_cast<unsigned char>(v.back()));
  if (!ok) return Status(StatusCode::kInvalidArgument, "unable to parse requirement: invalid label value: \"" + v + "\"");
  return Status::Ok();
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Splits at commas outside parentheses.
Result<std::vector<std::string>> splitTerms(const std::string& text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth < 0) return Status(StatusCode::kInvalidArgument, "found ')', expected: '(' in \"" + text + "\"");
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) return Status(StatusCode::kInvalidArgument, "found '', expected: ')' in \"" + text + "\"");
  out.push_back(trim(cur));
  return out;
}

Result<SelectorRequirement> parseTerm(const std::string& term) {
  SelectorRequirement r;
  if (term.empty()) return Status(StatusCode::kInvalidArgument, "found '', expected: identifier");
  if (term[0] == '!') {
    r.key = trim(term.substr(1));
    r.op = Op::kDoesNotExist;
    if (Status s = validateKey(r.key); !s.ok()) return s;
    return r;
  }
  // Set operators: "<key> in (...)" / "<key> notin (...)".
  auto paren = term.find('(');
  if (paren != std::string::npos) {
    std::string head = trim(term.substr(0, paren));
    if (term.back() != ')') return Status(StatusCode::kInvalidArgument, "found '', expected: ')' in \"" + term + "\"");
    auto sp = head.find_last_of(" \t");
    if (sp == std::string::npos) return Status(StatusCode::kInvalidArgument, "found '(', expected: in, notin in \"" + term + "\"");
    std::string opText = trim(head.substr(sp + 1));
    r.key = trim(head.substr(0, sp));
    if (opText == "in") r.op = Op::kIn;
    else if (opText == "notin") r.op = Op::kNotIn;
    else return Status(StatusCode::kInvalidArgument, "found '" + opText + "', expected: in, notin");
    std::string inner = term.substr(paren + 1, term.size() - paren - 2);
    size_t start = 0;
    while (true) {
      auto comma = inner.find(',', start);
      std::string v = trim(inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (Status s = validateValue(v); !s.ok()) return s;
      r.values.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else {
    static const std::pair<const char*, Op> kOps[] = {{"==", Op::kDoubleEquals}, {"!=", Op::kNotEquals},
                                                      {"=", Op::kEquals},        {">", Op::kGreaterThan},
                                                      {"<", Op::kLessThan}};
    size_t at = std::string::npos;
    for (const auto& [text, op] : kOps) {
      auto p = term.find(text);
      if (p != std::string::npos) {
        at = p;
        r.op = op;
        r.key = trim(term.substr(0, p));
        r.values = {trim(term.substr(p + std::char_traits<char>::length(text)))};
        break;
      }
    }
    if (at == std::string::npos) {
      r.key = term;
      r.op = Op::kExists;
    } else if (r.op == Op::kGreaterThan || r.op == Op::kLessThan) {
      char* end = nullptr;
      std::strtoll(r.values[0].c_str(), &end, 10);
      if (r.values[0].empty() || *end != '\0')
        return Status(StatusCode::kInvalidArgument, "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer");
    } else if (Status s = validateValue(r.values[0]); !s.ok()) {
      return s;
    }
  }
  if (Status s = validateKey(r.key); !s.ok()) return s;
  std::sort(r.values.begin(), r.values.end());
  r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
  return r;
}

}  // namespace

bool SelectorRequirement::matches(const StringMap<String>& labels) const {
  auto it = labels.find(key);
  const bool has = it != labels.end();
  auto in = [&] { return has && std::binary_search(values.begin(), values.end(), it->second); };
  switch (op) {
    case Op::kEquals:
    case Op::kDoubleEquals:
    case Op::kIn: return in();
    case Op::kNotEquals:
    case Op::kNotIn: return !in();
    case Op::kExists: return has;
    case Op::kDoesNotExist: return !has;
    case Op::kGreaterThan:
    case Op::kLessThan: {
      if (!has) return false;
      char* end = nullptr;
      long long lv = std::strtoll(it->second.c_str(), &end, 10);
      if (it->second.empty() || *end != '\0') return false;
      long long rv = std::strtoll(values[0].c_str(), nullptr, 10);
      return op == Op::kGreaterThan ? lv > rv : lv < rv;
    }
  }
  return false;
}

std::string SelectorRequirement::str() const {
  auto joined = [&] {
    std::string s;
    for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + values[i];
    return s;
  };
  switch (op) {
    case Op::kEquals: return key + "=" + joined();
    case Op::kDoubleEquals: return key + "==" + joined();
    case Op::kNotEquals: return key + "!=" + joined();
    case Op::kIn: return key + " in (" + joined() + ")";
    case Op::kNotIn: return key + " notin (" + joined() + ")";
    case Op::kExists: return key;
    case Op::kDoesNotExist: return "!" + key;
    case Op::kGreaterThan: return key + ">" + joined();
    case Op::kLessThan: return key + "<" + joined();
  }
  return key;
}

void Selector::add(SelectorRequirement r) {
  auto at = std::upper_bound(reqs_.begin(), reqs_.end(), r.key,
                             [](const std::string& k, const SelectorRequirement& x) { return k < x.key; });
  reqs_.insert(at, std::move(r));
}

bool Selector::matches(const StringMap<String>& labels) const {
  if (nothing_) return false;
  return std::all_of(reqs_.begin(), reqs_.end(), [&](const SelectorRequirement& r) { return r.matches(labels); });
}

std::string Selector::str() const {
  std::string s;
  for (size_t i = 0; i < reqs_.size(); ++i) s += (i ? "," : "") + reqs_[i].str();
  return s;
}

Result<Selector> parseSelector(const std::string& text) {
  Selector sel = Selector::everything();
  if (trim(text).empty()) return sel;
  auto terms = splitTerms(text);
  if (!terms.ok()) return terms.status();
  for (const auto& t : *terms) {
    auto r = parseTerm(t);
    if (!r.ok()) return r.status();
    sel.add(std::move(*r));
  }
  return sel;
}

Result<Selector> selectorFromLabelSelector(const meta::v1::LabelSelector* ls) {
  if (!ls) return Selector::nothing();
  Selector sel = Selector::everything();
  for (const auto& [k, v] : ls->matchLabels) {
    if (Status s = validateKey(k); !s.ok()) return s;
    if (Status s = validateValue(v); !s.ok()) return s;
    sel.add({k, Op::kEquals, {v}});
  }
  for (const auto& e : ls->matchExpressions) {
    SelectorRequirement r{e.key, Op::kIn, {e.values.begin(), e.values.end()}};
    if (e.operator_ == "In" || e.operator_ == "NotIn") {
      r.op = e.operator_ == "In" ? Op::kIn : Op::kNotIn;
      if (e.values.empty())
        return Status(StatusCode::kInvalidArgument, "for 'in', 'notin' operators, values set can't be empty");
    } else if (e.operator_ == "Exists" || e.operator_ == "DoesNotExist") {
      r.op = e.operator_ == "Exists" ? Op::kExists : Op::kDoesNotExist;
      if (!e.values.empty())
        return Status(StatusCode::kInvalidArgument, "values set must be empty for exists and does not exist");
    } else {
      return Status(StatusCode::kInvalidArgument, "\"" + e.operator_ + "\" is not a valid label selector operator");
    }
    if (Status s = validateKey(r.key); !s.ok()) return s;
    for (const auto& v : r.values)  // labels.NewRequirement checks each value as a label value
      if (Status s = validateValue(v); !s.ok()) return s;
    std::sort(r.values.begin(), r.values.end());
    r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
    sel.add(std::move(r));
  }
  return sel;
}

}  // namespace kcm::api
