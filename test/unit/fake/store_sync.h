#pragma once
// For controller tests whose informers never run: makes an informer's store hold exactly what the fake apiserver
// has now (no handlers are called).
#include <memory>
#include <string>

#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::testing {

template <class T>
void reloadStore(const FakeApiServer& server, informers::SharedInformerFactory& factory, const std::string& ns) {
  auto& store = factory.forType<T>().store();
  for (const auto& o : store.list()) store.erase(informers::metaNamespaceKey(*o));
  for (auto& o : server.list<T>(ns)) {
    const std::string k = informers::metaNamespaceKey(o);  // before the move: argument order is unspecified
    store.upsert(k, std::make_shared<const T>(std::move(o)));
  }
}

}  // namespace kcm::testing
