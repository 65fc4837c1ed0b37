"""The WhatsApp Cloud API webhook's notification body, as Meta sends it (only the fields we read)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class TextBody(_Lenient):
    body: str = ""


class InboundMessage(_Lenient):
    """One message a person sent: ``type`` is 'text', 'audio', 'image', 'video', 'document', 'sticker', …"""

    id: str = Field(min_length=1, max_length=256)
    sender: str = Field(alias="from", pattern=r"^[0-9]{4,20}$", description="The sender's WhatsApp id (a number).")
    timestamp: str = ""
    type: str = "text"
    text: TextBody | None = None


class Metadata(_Lenient):
    display_phone_number: str = ""
    phone_number_id: str = ""


class Value(_Lenient):
    messaging_product: str = "whatsapp"
    metadata: Metadata = Metadata()
    messages: list[InboundMessage] = Field(default_factory=list)
    statuses: list[dict[str, object]] = Field(default_factory=list, description="Delivery receipts; ignored.")


class Change(_Lenient):
    field: str = ""
    value: Value = Value()


class Entry(_Lenient):
    id: str = ""
    changes: list[Change] = Field(default_factory=list)


class Notification(_Lenient):
    object: str
    entry: list[Entry] = Field(default_factory=list)

    def messages(self, phone_number_id: str) -> list[InboundMessage]:
        """Messages sent to our number (an app can serve several numbers; others' messages are not ours)."""
        return [
            message
            for entry in self.entry
            for change in entry.changes
            if change.field == "messages" and change.value.metadata.phone_number_id == phone_number_id
            for message in change.value.messages
        ]
