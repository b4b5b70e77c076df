// The runner's ATen observer: a global RecordFunction callback (scope FUNCTION: every operator the
// dispatcher runs, whether Python, C++ or a load_inline extension called it) that counts, once armed,
// every operator and the operators outside the allow-list, into a page of shared memory the monitor
// reads directly (verifier/sandbox/observer.py owns the layout). Loaded by the runner before any
// candidate code; armed once ModelNew is constructed and never disarmed, so nothing in the runner's
// process can tell a checked call from any other.
#include <ATen/record_function.h>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_set>

namespace {
struct Page {
  uint64_t magic;
  uint64_t total;      // operators seen while armed
  uint64_t forbidden;  // of which outside the allow-list
  uint64_t armed;
  char names[8][64];   // the first forbidden operators' names
};
Page* g_page = nullptr;
std::unordered_set<std::string>* g_allowed = nullptr;
std::unordered_set<std::string>* g_torch_namespaces = nullptr;

bool allowed(const char* name) {
  const char* sep = std::strstr(name, "::");
  if (!sep) return true;
  std::string ns(name, sep - name);
  if (!g_torch_namespaces->count(ns)) return true;  // the candidate's own custom operators
  return ns == "aten" && g_allowed->count(std::string(sep + 2));
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Page* page = g_page;
  if (!page || !page->armed) return nullptr;
  __atomic_fetch_add(&page->total, 1, __ATOMIC_RELAXED);
  const char* name = fn.name();
  if (!name || allowed(name)) return nullptr;
  uint64_t k = __atomic_fetch_add(&page->forbidden, 1, __ATOMIC_RELAXED);
  if (k < 8) std::strncpy(page->names[k], name, 63);
  return nullptr;
}

void split(const char* text, std::unordered_set<std::string>* into) {
  std::string s(text);
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) into->insert(s.substr(start, end - start));
    start = end + 1;
  }
}
}  // namespace

extern "C" int evokernel_observer_install(void* page, const char* allowed_ops, const char* torch_namespaces) {
  if (g_page) return 1;
  g_allowed = new std::unordered_set<std::string>();
  g_torch_namespaces = new std::unordered_set<std::string>();
  split(allowed_ops, g_allowed);
  split(torch_namespaces, g_torch_namespaces);
  g_page = static_cast<Page*>(page);
  at::addGlobalCallback(at::RecordFunctionCallback(&on_start).scopes({at::RecordScope::FUNCTION}).needsInputs(false));
  return 0;
}

extern "C" void evokernel_observer_arm(void) {
  if (g_page) __atomic_store_n(&g_page->armed, 1, __ATOMIC_RELEASE);
}
