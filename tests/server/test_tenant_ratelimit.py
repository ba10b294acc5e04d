"""Per-tenant rate limits over real HTTP: all of a tenant's keys share one budget (issue 17, item 10)."""

from __future__ import annotations

from .conftest import ApiFactory

SLOW = 0.01  # tokens per second: none comes back while the test runs, however loaded the machine


def test_a_tenants_keys_share_its_limit_and_the_429_says_which_limit(make_api: ApiFactory) -> None:
    api = make_api(rate_limit_per_second=SLOW, rate_limit_burst=3, tenant_rate_limit_per_second=SLOW, tenant_rate_limit_burst=4)
    first, second, neighbour = api.key("acme"), api.key("acme"), api.key("globex")
    with api.client(first) as one, api.client(second) as two, api.client(neighbour) as other:
        assert [one.get("/v1/collections").status_code for _ in range(3)] == [200, 200, 200]
        assert two.get("/v1/collections").status_code == 200  # the tenant's 4th request
        limited = two.get("/v1/collections")  # the key has 2 tokens left, its tenant none
        assert limited.status_code == 429
        error = limited.json()["error"]
        assert error["code"] == "rate_limited"
        assert error["message"].startswith("the rate limit of tenant 'acme' (shared by all its API keys) of 0.01 requests/s (burst 4)")
        assert int(limited.headers["retry-after"]) >= 1
        assert other.get("/v1/collections").status_code == 200  # another tenant has its own budget


def test_a_keys_own_limit_is_named_when_it_is_the_one_refusing(make_api: ApiFactory) -> None:
    api = make_api(rate_limit_per_second=SLOW, rate_limit_burst=2, tenant_rate_limit_burst=100)
    with api.client(api.key("acme")) as client:
        assert [client.get("/v1/collections").status_code for _ in range(2)] == [200, 200]
        limited = client.get("/v1/collections")
        assert limited.status_code == 429
        assert limited.json()["error"]["message"].startswith("the API key's rate limit of 0.01 requests/s (burst 2) exceeded")
        assert int(limited.headers["retry-after"]) >= 1
