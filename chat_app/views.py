from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def chat_home(request: HttpRequest) -> HttpResponse:
    return render(request, "chat_app/chat.html", {})
