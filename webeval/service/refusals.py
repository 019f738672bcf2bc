"""What the service refuses, and how: each refusal is an HTTP status and one line that says what to do."""

from __future__ import annotations


class ServiceError(Exception):
    """A request the service answers with an HTTP error: the status and one line."""

    status = 500

    def __init__(self, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail, self.headers = detail, headers or {}


class NotFound(ServiceError):
    status = 404


class Unauthorized(ServiceError):
    status = 401


class Forbidden(ServiceError):
    status = 403


class Conflict(ServiceError):
    status = 409


class Unprocessable(ServiceError):
    status = 422


class Busy(ServiceError):
    status = 429


class Unavailable(ServiceError):
    status = 503


class Late(ServiceError):
    status = 504
